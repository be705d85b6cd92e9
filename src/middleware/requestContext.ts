import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Request id (echoed when the client sends a sane one) and one structured log line per request. */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const startedAt = Date.now();
  const incoming = c.req.header("X-Request-Id");
  const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  c.header("X-Request-Id", requestId);
  if (c.env.LOG_REQUESTS !== "false") {
    console.log(
      JSON.stringify({
        level: "info",
        msg: "request",
        method: c.req.method,
        path: new URL(c.req.url).pathname,
        status: c.res.status,
        durationMs: Date.now() - startedAt,
        clientId: c.get("client")?.id ?? null,
        requestId,
      }),
    );
  }
};
