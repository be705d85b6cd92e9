import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { DomainError, detail } from "../../lib/errors";
import { queryBool } from "../../lib/fields";
import { callingClient } from "../../middleware/auth";
import { Health, readiness } from "../../services/operations";
import { apiRoute, createRouter, envelope } from "../openapi";

const health = apiRoute({
  method: "get",
  path: "/health",
  tags: ["System"],
  summary: "Liveness; with deep=1 (internal clients) readiness of every dependency",
  description:
    "Plain `/health` needs no key and touches nothing. `?deep=1` needs an internal client's key and answers 503 when a dependency fails.",
  public: true,
  request: { query: z.object({ deep: queryBool().optional() }) },
  response: envelope(Health),
});

export const systemRouter = createRouter().openapi(health, async (c) => {
  const base = { environment: c.env.ENVIRONMENT, time: new Date().toISOString() };
  if (!c.req.valid("query").deep) return c.json(ok({ status: "ok" as const, ...base }), 200);
  const client = await callingClient(c);
  if (!client.internal) throw DomainError.of("internal_only", "deep: may only be asked by internal clients");
  c.set("client", client);
  // Every shard, each named by its number: the check is no shard's own.
  const { ready, ...report } = await readiness({ env: c.env });
  const data = { status: ready ? ("ok" as const) : ("unavailable" as const), ...base, ...report };
  if (!ready) {
    const failing = Object.entries(report.checks).filter(([, check]) => !check.ok);
    const details = failing.map(([name, check]) => detail("service_unavailable", `${name}: ${check.error}`));
    throw new DomainError(details, { data });
  }
  return c.json(ok(data), 200);
});
