import { createRoute, OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../env";
import { BASE_PATH, NDJSON, onlyReads } from "../lib/calls";
import { IF_MATCH } from "../lib/entityTags";
import { detail, type ErrorCode, ErrorDetail } from "../lib/errors";
import { MARKETPLACES } from "../lib/vocabulary";
import { BOOKMARK } from "../middleware/d1Session";
import { takesIfMatch } from "../middleware/ifMatch";
import { strictInput, validationHook } from "./validation";

/** The path of a job, as the Location header of a call that queued it names it. */
export const jobPath = (queueItemId: number) => `${BASE_PATH}/jobs/${queueItemId}`;

/** Every router of the API is made here, so all share the validation hook and optional trailing slash. */
export const createRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: validationHook, strict: false });

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
    nextCursor: z.string().optional().openapi({
      description:
        "Lists that hand out cursors (GET /ads/): send it as `cursor` for the next page; absent on the last page",
    }),
  });

/**
 * The parts of an operation every operation shares: its headers and parameters, and its shared error
 * responses.
 */
const SHARED_PARTS = sharedOperationParts();

/** An error answer one operation adds to the shared ones (`ApiRouteOptions.errors`). */
export const operationError = (description: string, code: ErrorCode, message: string) =>
  SHARED_PARTS.error(description, code, message);

function sharedOperationParts() {
  /** An error response as the document shows it. */
  const ErrorEnvelope = z
    .object({
      result: z.literal(false),
      errors: z.array(z.string()).openapi({ example: ["title: must be 5-60 characters"] }),
      data: z.unknown(),
      errorDetails: z.array(ErrorDetail).openapi({
        description: "The `errors` with their codes, one per message in the same order",
        example: [{ code: "validation_failed", field: "title", message: "title: must be 5-60 characters" }],
      }),
    })
    .openapi("ErrorEnvelope");
  const header = (description: string) => ({ description, schema: { type: "string" as const } });

  /** Headers of every response. */
  const REQUEST_ID_HEADER = { "X-Request-Id": header("The request's id: yours echoed, or a new one; logs carry it") };
  /** Headers of every authenticated answer (RFC 9331 draft fields). */
  const RATE_LIMIT_HEADERS = {
    RateLimit: header('Remaining requests and seconds to reset, e.g. `"default";r=9;t=1`'),
    "RateLimit-Policy": header('The client\'s quota, e.g. `"default";q=10;w=4`'),
    "RateLimit-Cost": header(
      "The tokens this answer cost: 1, or one per ad of a batch and per verdict of a dry run (the first taken on arrival, the rest once done; the bucket may go below empty, and later requests wait until it is paid back)",
    ),
  };
  const RETRY_AFTER_HEADER = { "Retry-After": header("Seconds to wait before trying again") };

  /** An error response as the API writes it, for the document's examples. */
  const errorExample = (code: ErrorCode, message: string) => ({
    result: false,
    errors: [message],
    data: [],
    errorDetails: [detail(code, message)],
  });

  const errorResponse = (
    description: string,
    example: ReturnType<typeof errorExample>,
    headers: Record<string, ReturnType<typeof header>> = {},
  ) => ({
    description,
    headers: { ...REQUEST_ID_HEADER, ...headers },
    content: { "application/json": { schema: ErrorEnvelope, example } },
  });

  const commonErrors = {
    400: errorResponse(
      "Validation failed: one message per problem, naming the field",
      errorExample("validation_failed", "title: must be 5-60 characters"),
    ),
    401: errorResponse("Missing, unknown or revoked API key", errorExample("invalid_api_key", "invalid API key")),
    403: errorResponse(
      "A field or call reserved for internal clients",
      errorExample("internal_only", "walletUserId: may only be set by internal clients"),
    ),
    404: errorResponse(
      "Unknown resource, or a resource of another client",
      errorExample("user_not_found", "userId: user 42 not found"),
    ),
    409: errorResponse(
      "The resource is in a conflicting state, or the first request with this Idempotency-Key is still running (then with Retry-After)",
      errorExample("insufficient_means", `portal: ${MARKETPLACES[0]} - adId: 7 - insufficient means`),
      RETRY_AFTER_HEADER,
    ),
    413: errorResponse("Request body over 1 MiB", errorExample("body_too_large", "body: must not exceed 1 MiB")),
    429: errorResponse("Rate limit exceeded; see Retry-After", errorExample("rate_limited", "rate limit exceeded"), {
      ...RATE_LIMIT_HEADERS,
      ...RETRY_AFTER_HEADER,
    }),
    500: errorResponse(
      "Unexpected failure (`internal error`), logged with the request id",
      errorExample("internal_error", "internal error"),
    ),
    503: errorResponse(
      "A dependency did not answer (the database of the client's data: `shard_unavailable`; another: `service_unavailable`); send the call again after Retry-After",
      errorExample("shard_unavailable", "shard 2, which holds this client's data, did not answer; try again"),
      RETRY_AFTER_HEADER,
    ),
  } as const;

  const stalled = errorResponse(
    "A stock sent as NDJSON sent nothing for 60 seconds (SYNC_UPLOAD_STALL_SECONDS): the sync ended, nothing of it applied",
    errorExample(
      "upload_stalled",
      "body: nothing arrived for 60 s; the sync ended and nothing of it was applied, send the stock again",
    ),
  );
  const groupMismatch = errorResponse(
    "The resources named lie in two client groups",
    errorExample(
      "client_group_mismatch",
      "folderId: 12 is in another client group than userId 7; they must be in the same one",
    ),
  );

  /** Idempotency on writes: the header, and what a write can answer because of it. */
  const IDEMPOTENCY_KEY_PARAMETER = {
    name: "Idempotency-Key",
    in: "header" as const,
    required: false,
    description:
      "Any unique string (1-255 characters, e.g. a UUID). The first answer for a key is kept 24 hours and replayed, with `Idempotent-Replayed: true`, to a repeat of the same request; the same key with another request answers 422, and while the first still runs 409.",
    schema: { type: "string" as const, minLength: 1, maxLength: 255 },
  };
  /** D1 Sessions: the bookmark of the data a response saw; sent back, the next read sees at least that. */
  const BOOKMARK_PARAMETER = {
    name: "x-d1-bookmark",
    in: "header" as const,
    required: false,
    description:
      "The `x-d1-bookmark` of an earlier answer: this request then reads at least what that answer saw (your own writes), wherever it is served.",
    schema: { type: "string" as const, pattern: BOOKMARK.source },
  };
  const BOOKMARK_HEADER = {
    "x-d1-bookmark": header("The database bookmark this answer saw; send it back to read your own writes"),
  };
  const writeErrors = {
    422: errorResponse(
      "The Idempotency-Key was used with a different request",
      errorExample("idempotency_conflict", "Idempotency-Key: was used with a different request"),
    ),
  } as const;
  /** Conditional writes: the tag a read answered, checked in the write's own transaction. */
  const ETAG_HEADER = {
    ETag: header(
      "The resource's entity tag: send it as `If-Match` with a write to refuse the write (412) when the resource changed meanwhile",
    ),
  };
  const IF_MATCH_PARAMETER = {
    name: "If-Match",
    in: "header" as const,
    required: false,
    description:
      "The `ETag` of your last read of the resource (or `*`): the write is refused with 412 `precondition_failed` when the resource changed since, and nothing is written",
    schema: { type: "string" as const, pattern: IF_MATCH.source },
  };
  const preconditionFailed = errorResponse(
    "If-Match named another revision: the resource changed since it was read (nothing was written)",
    errorExample("precondition_failed", "If-Match: the resource changed since the ETag was read; read it again"),
  );
  const REPLAYED_HEADER = {
    "Idempotent-Replayed": {
      description: "`true` when this answer is the replay of the first answer for the Idempotency-Key",
      schema: { type: "string" as const },
    },
  };

  return {
    /** An answer particular to one operation: its description and an example of its problem. */
    error: (description: string, code: ErrorCode, message: string) =>
      errorResponse(description, errorExample(code, message)),
    responseHeaders: (options: { method: Method; path: string; public?: boolean; entityTag?: true }) => ({
      ...REQUEST_ID_HEADER,
      ...(options.public ? {} : { ...RATE_LIMIT_HEADERS, ...BOOKMARK_HEADER }),
      ...(onlyReads(options.method, options.path) ? {} : REPLAYED_HEADER),
      ...(options.entityTag && options.method === "get" ? ETAG_HEADER : {}),
    }),
    parameters: (options: { method: Method; path: string; entityTag?: true }) =>
      onlyReads(options.method, options.path)
        ? [BOOKMARK_PARAMETER]
        : [IDEMPOTENCY_KEY_PARAMETER, BOOKMARK_PARAMETER, ...(options.entityTag ? [IF_MATCH_PARAMETER] : [])],
    // Only the statuses an operation can answer: a conflict and an idempotency conflict only from a
    // write, a body too large only with a body.
    errors: (options: { method: Method; path: string; request?: { body?: unknown } | undefined; entityTag?: true }) => {
      const { 409: conflict, 413: tooLarge, ...always } = commonErrors;
      // A body read as it arrives (NDJSON) that stops arriving: 408.
      const streams = NDJSON in ((options.request?.body as { content?: object } | undefined)?.content ?? {});
      const writes = !onlyReads(options.method, options.path);
      // A read naming two resources (`/folders/{userId}/{folderId}`) finds them in two client groups: 409.
      const namesTwo = (options.path.match(/\{\w+Id\}/g) ?? []).length > 1;
      return {
        ...always,
        ...(writes ? { 409: conflict, ...writeErrors } : namesTwo ? { 409: groupMismatch } : {}),
        ...(writes && options.entityTag ? { 412: preconditionFailed } : {}),
        ...(options.request?.body ? { 413: tooLarge } : {}),
        ...(streams ? { 408: stalled } : {}),
      };
    },
  };
}

type Method = "get" | "post" | "put" | "patch" | "delete";

const VERBS: Record<Method, string> = { get: "get", post: "create", put: "update", patch: "patch", delete: "delete" };

/**
 * A stable operationId from the path and method, which the contract fixes: `/publish/batch` DELETE is
 * `publish.batch.delete`, `/users/{userId}` GET is `users.byUserId.get`.
 */
export function operationIdOf(method: Method, path: string): string {
  const parts = path
    .split("/")
    .filter(Boolean)
    .map((part) => (part.startsWith("{") ? `by${part[1]?.toUpperCase()}${part.slice(2, -1)}` : part));
  return [...parts, VERBS[method]].join(".");
}

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
  /** Overrides the operationId derived from method and path. */
  operationId?: string;
  /** Headers of the 200 answer particular to this operation (e.g. Location). */
  headers?: Record<string, { description: string; schema: { type: "string" } }>;
  /** A read answers the resource's ETag (`tagAnswer`); a write takes `If-Match` and may answer 412. */
  entityTag?: true;
  /** Answers particular to this operation beside the shared ones (`operationError`). */
  errors?: Record<number, ReturnType<typeof operationError>>;
}

/** The headers of calls that queue work: the job to follow, and every job the call queued or found open. */
export const JOB_HEADERS: Record<string, { description: string; schema: { type: "string" } }> = {
  Location: { description: "The queued job: GET it to follow the work", schema: { type: "string" as const } },
  "Job-Ids": {
    description:
      "The ids of the jobs the call queued (or found open, for a repeat), comma-separated: `GET /jobs/<id>` follows each. The body stays `data: []`, as the contract fixes",
    schema: { type: "string" as const },
  },
};

/** Names the jobs a call queued in its response's headers (`JOB_HEADERS`); none: no header. */
export function nameJobs(c: Context<AppEnv>, jobIds: number[]) {
  const [first] = jobIds;
  if (first === undefined) return;
  c.header("Location", jobPath(first));
  c.header("Job-Ids", jobIds.join(","));
}

/**
 * An operation of the API: the 200 envelope plus the shared error responses and bearer security,
 * so a route file states only what is particular to it.
 */
export function apiRoute<
  const M extends Method,
  const P extends string,
  D extends z.ZodType,
  R extends RouteConfig["request"] = undefined,
>(options: ApiRouteOptions<M, P, R, D>) {
  return createRoute({
    operationId: options.operationId ?? operationIdOf(options.method, options.path),
    method: options.method,
    path: options.path,
    tags: options.tags,
    summary: options.summary,
    description: options.description,
    request: strictInput(options.request as R),
    security: options.public ? [] : [{ bearerAuth: [] }],
    ...(options.entityTag && options.method !== "get" ? { middleware: [takesIfMatch] as const } : {}),
    ...sharedParameters(options),
    responses: {
      200: {
        description: "Success",
        headers: { ...SHARED_PARTS.responseHeaders(options), ...options.headers },
        content: { "application/json": { schema: options.response } },
      },
      ...SHARED_PARTS.errors(options),
      ...options.errors,
    },
  });
}

/** An operation's shared parameters (a public one takes none). */
const sharedParameters = (options: { method: Method; path: string; public?: boolean }) =>
  options.public ? {} : { parameters: SHARED_PARTS.parameters(options) };

/** A required JSON body. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});
