import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { RouterRoute } from "hono/types";
import { GROUP_MOVING } from "../db/moves";
import { failureText } from "../db/triggers";
import { notAnswering } from "../db/unavailable";
import type { AppEnv } from "../env";
import { failure } from "../lib/envelope";
import { DomainError, detail } from "../lib/errors";
import { preconditionFailure } from "../services/shared";

export const BODY_TOO_LARGE = () => DomainError.of("body_too_large", "body: must not exceed 1 MiB");

/** Hono's own exceptions (body parsing, media type) in the API's words; others are unexpected. */
function fromHttpException(error: HTTPException): DomainError | null {
  switch (error.status) {
    case 400:
      return DomainError.of("malformed_body", "body: malformed JSON");
    case 413:
      return BODY_TOO_LARGE();
    case 415:
      return DomainError.of("unsupported_media_type", "body: Content-Type must be application/json");
    default:
      return null;
  }
}

/** Seconds a write refused during a group's switch to another shard waits: the switch takes about that long. */
const GROUP_MOVING_RETRY_SECONDS = 2;

/** A write refused because the client's group is switching shards (src/db/moves/), as the coded error. */
const groupMovingFailure = (error: unknown) =>
  failureText(error).includes(GROUP_MOVING)
    ? new DomainError(
        detail("group_moving", "the client's data is moving to another database; try again in a few seconds"),
        { retryAfterSeconds: GROUP_MOVING_RETRY_SECONDS },
      )
    : undefined;

/** Seconds a call a dependency did not answer waits before it is sent again. */
const NOT_ANSWERING_RETRY_SECONDS = 5;

/**
 * A dependency that did not answer (src/db/unavailable.ts): 503 with Retry-After, so a client tells an
 * outage from a bug and retries. A database once the request's shard is known is that shard
 * (`shard_unavailable`, named); the directory before it, a bucket or a Durable Object, `service_unavailable`.
 */
const notAnsweringFailure = (error: unknown, c: Context<AppEnv>) => {
  const which = notAnswering(error);
  if (!which) return undefined;
  const shard = c.var.shardEnv?.shard.number;
  return new DomainError(
    which === "service" || shard === undefined
      ? detail("service_unavailable", "a service this call needs did not answer; try again")
      : detail("shard_unavailable", `shard ${shard}, which holds this client's data, did not answer; try again`),
    { retryAfterSeconds: NOT_ANSWERING_RETRY_SECONDS },
  );
};

/** The one place errors become answers: the envelope with codes, never a stack trace. */
export const onError: ErrorHandler<AppEnv> = (error, c) => {
  const known =
    error instanceof DomainError
      ? error
      : error instanceof HTTPException
        ? fromHttpException(error)
        : (preconditionFailure(error) ?? groupMovingFailure(error) ?? notAnsweringFailure(error, c) ?? null);
  // An ETag read before the failure names no answer (and no resource of another client).
  c.header("ETag", undefined);
  if (known) {
    for (const [name, value] of Object.entries(known.options.headers ?? {})) c.header(name, value);
    if (known.options.retryAfterSeconds !== undefined) c.header("Retry-After", String(known.options.retryAfterSeconds));
    return c.json(failure(known.details, known.options.data ?? []), known.status);
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
  return c.json(failure([detail("internal_error", "internal error")]), 500);
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
    if (allowed.length === 0)
      return c.json(failure([detail("route_not_found", `route not found: ${c.req.method} ${path}`)]), 404);
    c.header("Allow", allowed.join(", "));
    const message = `method not allowed: ${c.req.method} ${path}; allowed: ${allowed.join(", ")}`;
    return c.json(failure([detail("method_not_allowed", message)]), 405);
  };
};
