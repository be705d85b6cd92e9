import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { AppEnv } from "../env";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Request id (echoed when the client sends a sane one), a `request` metric by route and status, and one
 * log line per request unless LOG_REQUESTS is "false" (production, where the platform's invocation logs
 * already record every request).
 */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const startedAt = Date.now();
  const incoming = c.req.header("X-Request-Id");
  const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  c.header("X-Request-Id", requestId);
  const durationMs = Date.now() - startedAt;
  metricsOf(c.env).record({
    event: "request",
    route: routePath(c, -1),
    method: c.req.method,
    status: c.res.status,
    durationMs,
  });
  if (c.env.LOG_REQUESTS !== "false") {
    log("info", "request", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      status: c.res.status,
      durationMs,
      clientId: c.get("client")?.id ?? null,
      requestId,
    });
  }
};
