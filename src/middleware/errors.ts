import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "../env";
import { failure } from "../lib/envelope";
import { ApiError } from "../lib/errors";

/** Hono's own exceptions (body parsing, media type) in the API's words. */
function fromHttpException(error: HTTPException): ApiError {
  switch (error.status) {
    case 400:
      return new ApiError(400, ["body: malformed JSON"]);
    case 413:
      return new ApiError(413, ["body: must not exceed 1 MiB"]);
    case 415:
      return new ApiError(415, ["body: Content-Type must be application/json"]);
    default:
      return new ApiError(error.status as ApiError["status"], [error.message || "request failed"]);
  }
}

/** The one place errors become answers: the envelope, never a stack trace. */
export const onError: ErrorHandler<AppEnv> = (error, c) => {
  const apiError = error instanceof ApiError ? error : error instanceof HTTPException ? fromHttpException(error) : null;
  if (apiError) {
    for (const [name, value] of Object.entries(apiError.headers)) c.header(name, value);
    return c.json(failure(apiError.messages, apiError.data), apiError.status);
  }
  console.error(
    JSON.stringify({
      level: "error",
      msg: "unhandled error",
      requestId: c.get("requestId"),
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error),
    }),
  );
  return c.json(failure(["internal error"]), 500);
};

export const onNotFound: NotFoundHandler<AppEnv> = (c: Context<AppEnv>) =>
  c.json(failure([`route not found: ${c.req.method} ${new URL(c.req.url).pathname}`]), 404);
