import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { DomainError, detail } from "../lib/errors";
import { issueDetails } from "../lib/issues";

/**
 * One wording for zod's issues across the API, so every 400 reads `<field>: <problem>`.
 * Installed once at start-up (see app.ts).
 */
const articles: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  array: "an array",
  // A fixed number of items (`[from, to]`): a JSON array all the same.
  tuple: "an array",
  object: "an object",
  date: "a date",
};

export function installZodMessages(): void {
  z.config({
    customError: (issue) => {
      switch (issue.code) {
        case "invalid_type":
          if (issue.input === undefined) return "is required";
          return `must be ${articles[issue.expected] ?? issue.expected}`;
        case "too_small":
          if (issue.origin === "string") return `must be at least ${issue.minimum} characters`;
          if (issue.origin === "array") return `must have at least ${issue.minimum} items`;
          return `must be at least ${issue.minimum}`;
        case "too_big":
          if (issue.origin === "string") return `must be at most ${issue.maximum} characters`;
          if (issue.origin === "array") return `must have at most ${issue.maximum} items`;
          return `must be at most ${issue.maximum}`;
        case "invalid_format":
          if (issue.format === "email") return "must be a valid e-mail address";
          if (issue.format === "url") return "must be a valid URL";
          return "has an invalid format";
        case "invalid_value":
          return `must be one of: ${issue.values.map((v) => (v === "" ? '""' : String(v))).join(", ")}`;
        case "invalid_union":
          return "has an invalid value";
        case "unrecognized_keys":
          return "unknown field";
        case "not_multiple_of":
          return `must be a multiple of ${issue.divisor}`;
        default:
          return undefined;
      }
    },
  });
}

/**
 * The ids a body repeats from its path (a client sends back what it read): each one given must name what
 * the path names (an array, only that), or the call returns 400 `not_updatable`.
 */
export function requireBodyMatchesPath(body: Record<string, unknown> | undefined, params: Record<string, unknown>) {
  const matches = (given: unknown, fromPath: unknown) =>
    Array.isArray(given) ? given.every((value) => value === fromPath) : given === fromPath;
  const differing = Object.keys(params).filter((key) => body?.[key] !== undefined && !matches(body[key], params[key]));
  if (differing.length > 0)
    throw new DomainError(
      differing.map((key) => detail("not_updatable", `${key}: must match the path (${String(params[key])})`)),
    );
}

/** Default hook of every router: a failed validation becomes a 400 envelope. */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target?: string },
  _c: Context,
): void {
  if (!result.success) {
    const root = result.target === "json" ? "body" : (result.target ?? "body");
    throw new DomainError(issueDetails(result.error, root));
  }
}

/**
 * A request's body and query as strict objects: a key the schema does not name is an `unknown_field`.
 * (`catchall` keeps the schema's OpenAPI name; the document then says `additionalProperties: false`.)
 */
export function strictInput<R extends { body?: unknown; query?: unknown } | undefined>(request: R): R {
  if (!request) return request;
  const strict = <T>(schema: T): T => (schema instanceof z.ZodObject ? (schema.catchall(z.never()) as T) : schema);
  const body = request.body as { content?: Record<string, { schema: unknown }> } | undefined;
  const json = body?.content?.["application/json"];
  return {
    ...request,
    ...(request.query ? { query: strict(request.query) } : {}),
    ...(json && body
      ? {
          body: { ...body, content: { ...body.content, "application/json": { ...json, schema: strict(json.schema) } } },
        }
      : {}),
  };
}
