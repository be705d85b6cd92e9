import { createRoute, OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { validationHook } from "./validation";

/** Every router of the API is made here, so all share the validation hook and optional trailing slash. */
export const createRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: validationHook, strict: false });

export const ErrorEnvelope = z
  .object({
    result: z.literal(false),
    errors: z.array(z.string()).openapi({ example: ["title: must be 5-60 characters"] }),
    data: z.unknown(),
  })
  .openapi("ErrorEnvelope");

/** `data` of answers that carry nothing: always `[]`. */
export const EmptyData = z.array(z.unknown()).max(0).openapi({ description: "always an empty array" });

export const envelope = <T extends z.ZodType>(data: T) =>
  z.object({ result: z.boolean(), errors: z.array(z.string()), data });

export const listEnvelope = <T extends z.ZodType>(item: T) =>
  z.object({
    result: z.boolean(),
    errors: z.array(z.string()),
    data: z.array(item),
    fromCache: z.boolean(),
    totalItems: z.number().int(),
    totalInSet: z.number().int(),
    page: z.number().int(),
    itemsPerPage: z.number().int(),
    speed: z.number().openapi({ description: "seconds spent on the request" }),
  });

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorEnvelope } },
});

const commonErrors = {
  400: errorResponse("Validation failed: one message per problem, naming the field"),
  401: errorResponse("Missing, unknown or revoked API key"),
  403: errorResponse("A field or call reserved for internal clients"),
  404: errorResponse("Unknown resource, or a resource of another client"),
  409: errorResponse("The resource is in a conflicting state"),
  413: errorResponse("Request body over 1 MiB"),
  429: errorResponse("Rate limit exceeded; see Retry-After"),
  500: errorResponse("Unexpected failure (`internal error`), logged with the request id"),
} as const;

type Method = "get" | "post" | "put" | "patch" | "delete";

interface ApiRouteOptions<M extends Method, P extends string, R extends RouteConfig["request"], D extends z.ZodType> {
  method: M;
  path: P;
  tags: string[];
  summary: string;
  description?: string;
  request?: R;
  /** Schema of the full 200 response (an envelope or list envelope). */
  response: D;
  /** Public routes (health, docs) carry no bearer requirement. */
  public?: boolean;
}

/**
 * An operation of the API: the 200 envelope plus the shared error answers and bearer security,
 * so a route file states only what is particular to it.
 */
export function apiRoute<
  const M extends Method,
  const P extends string,
  D extends z.ZodType,
  R extends RouteConfig["request"] = undefined,
>(options: ApiRouteOptions<M, P, R, D>) {
  return createRoute({
    method: options.method,
    path: options.path,
    tags: options.tags,
    summary: options.summary,
    description: options.description,
    request: options.request as R,
    security: options.public ? [] : [{ bearerAuth: [] }],
    responses: {
      200: { description: "Success", content: { "application/json": { schema: options.response } } },
      ...commonErrors,
    },
  });
}

/** A required JSON body. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

/** Writes on one collection path that take a JSON body and answer the same shape (e.g. the user's contacts). */
export const bodyRoutes =
  <const P extends string, D extends z.ZodType>(path: P, tags: string[], response: D) =>
  <const M extends "post" | "put" | "patch" | "delete", S extends z.ZodType>(method: M, body: S, summary: string) =>
    apiRoute({ method, path, tags, summary, request: { body: jsonBody(body) }, response });
