import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { apiRoute, createRouter, envelope } from "../../lib/openapi";

const Health = z.object({ status: z.literal("ok"), environment: z.string(), time: z.string() }).openapi("Health");

const health = apiRoute({
  method: "get",
  path: "/health",
  tags: ["System"],
  summary: "Liveness check; needs no API key",
  public: true,
  response: envelope(Health),
});

export const systemRouter = createRouter().openapi(health, (c) =>
  c.json(ok({ status: "ok" as const, environment: c.env.ENVIRONMENT, time: new Date().toISOString() }), 200),
);
