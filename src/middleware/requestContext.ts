import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { AppEnv } from "../env";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Request id (echoed when the client sends a sane one), a `request` metric by route and status, and one
 * log line per request unless LOG_REQUESTS is "false" (production, where the platform's invocation logs
 * already record every request). The rows D1 read and wrote for the request go in all three, and outside
 * production in a `Server-Timing` header, so what a call costs in D1's billing unit is visible to whoever
 * makes it.
 */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const startedAt = Date.now();
  const incoming = c.req.header("X-Request-Id");
  const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  c.header("X-Request-Id", requestId);
  // A refusal before the body was read (a bad key, a 429) stops the upload: the client hears it now, not
  // when its stock has been sent.
  const body = c.req.raw.body;
  if (c.res.status >= 400 && body && !c.req.raw.bodyUsed && !body.locked) {
    body.cancel().catch(() => {});
  }
  const durationMs = Date.now() - startedAt;
  const { rowsRead, rowsWritten } = c.get("d1Usage") ?? { rowsRead: 0, rowsWritten: 0 };
  if (c.env.ENVIRONMENT !== "production") {
    c.header("Server-Timing", `d1;desc="rows_read=${rowsRead} rows_written=${rowsWritten}"`, { append: true });
  }
  metricsOf(c.env).record({
    event: "request",
    route: routePath(c, -1),
    method: c.req.method,
    status: c.res.status,
    durationMs,
    rowsRead,
    rowsWritten,
  });
  if (c.env.LOG_REQUESTS !== "false") {
    log("info", "request", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      status: c.res.status,
      durationMs,
      rowsRead,
      rowsWritten,
      clientId: c.get("client")?.id ?? null,
      requestId,
    });
  }
};
