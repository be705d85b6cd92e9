import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { RouterRoute } from "hono/types";
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

/** A route pattern of Hono (`/rest/v1/ads/:adId`, `:key{images/.+}`) as a regular expression. */
const patternOf = (path: string) =>
  new RegExp(
    `^${path
      .replace(/\/$/, "")
      .split(/(:\w+(?:\{[^}]+\})?|\*)/)
      .map((part, i) => {
        if (i % 2 === 0) return part.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
        if (part === "*") return ".*";
        return part.includes("{") ? `(?:${part.slice(part.indexOf("{") + 1, -1)})` : "[^/]+";
      })
      .join("")}$`,
  );

/**
 * No route for this method and path: 405 with `Allow` when the path is served for other methods, 404
 * otherwise. The route table is read when first needed (the routers are mounted after this is set).
 */
export const onNotFound = (routes: () => RouterRoute[]): NotFoundHandler<AppEnv> => {
  let table: { pattern: RegExp; method: string }[] | undefined;
  return (c: Context<AppEnv>) => {
    table ??= routes()
      .filter((route) => route.method !== "ALL")
      .map((route) => ({ pattern: patternOf(route.path), method: route.method }));
    const path = new URL(c.req.url).pathname;
    const bare = path.length > 1 ? path.replace(/\/+$/, "") : path;
    const allowed = [...new Set(table.filter((route) => route.pattern.test(bare)).map((route) => route.method))];
    if (allowed.length === 0) return c.json(failure([`route not found: ${c.req.method} ${path}`]), 404);
    c.header("Allow", allowed.join(", "));
    return c.json(failure([`method not allowed: ${c.req.method} ${path}; allowed: ${allowed.join(", ")}`]), 405);
  };
};
