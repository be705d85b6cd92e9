import { z } from "@hono/zod-openapi";
import { openEnum } from "./fields";

/**
 * The error catalogue: every code a client can branch on, and its HTTP status. Defined once; the error
 * handler and the OpenAPI document read it from here. What each code means is the guide's table
 * (public/docs/guide.md, shown at /docs), which test/api/layout.test.ts holds to this catalogue code by
 * code; the meanings stay out of the Worker's bundle, which never shows them.
 */
export const ERROR_CODES = {
  validation_failed: { status: 400 },
  malformed_body: { status: 400 },
  unknown_field: { status: 400 },
  not_updatable: { status: 400 },
  reference_not_found: { status: 400 },
  invalid_activation_token: { status: 400 },
  invalid_login_link: { status: 400 },
  oauth_state_mismatch: { status: 400 },
  oauth_code_refused: { status: 400 },
  missing_api_key: { status: 401 },
  invalid_api_key: { status: 401 },
  internal_only: { status: 403 },
  route_not_found: { status: 404 },
  user_not_found: { status: 404 },
  ad_not_found: { status: 404 },
  contact_not_found: { status: 404 },
  folder_not_found: { status: 404 },
  task_not_found: { status: 404 },
  manufacturer_not_found: { status: 404 },
  job_not_found: { status: 404 },
  webhook_not_found: { status: 404 },
  delivery_not_found: { status: 404 },
  sync_not_found: { status: 404 },
  feed_not_found: { status: 404 },
  image_not_found: { status: 404 },
  portal_not_found: { status: 404 },
  category_not_found: { status: 404 },
  group_not_found: { status: 404 },
  move_not_found: { status: 404 },
  method_not_allowed: { status: 405 },
  upload_stalled: { status: 408 },
  insufficient_means: { status: 409 },
  ad_not_published: { status: 409 },
  ad_archived: { status: 409 },
  user_locked: { status: 409 },
  portal_not_connected: { status: 409 },
  portal_account_has_listings: { status: 409 },
  listing_incomplete: { status: 409 },
  listing_refused: { status: 409 },
  feature_not_available: { status: 409 },
  oauth_not_started: { status: 409 },
  job_not_retryable: { status: 409 },
  max_images_reached: { status: 409 },
  max_contacts_reached: { status: 409 },
  contact_in_use: { status: 409 },
  external_user_id_taken: { status: 409 },
  webhook_limit_reached: { status: 409 },
  task_limit_reached: { status: 409 },
  webhook_exists: { status: 409 },
  replay_in_progress: { status: 409 },
  idempotency_in_progress: { status: 409 },
  client_group_mismatch: { status: 409 },
  move_under_way: { status: 409 },
  sync_in_progress: { status: 409 },
  sync_lapsed: { status: 409 },
  sync_would_end_too_many: { status: 409 },
  precondition_failed: { status: 412 },
  body_too_large: { status: 413 },
  unsupported_media_type: { status: 415 },
  idempotency_conflict: { status: 422 },
  feed_unreadable: { status: 422 },
  rate_limited: { status: 429 },
  activation_limit_reached: { status: 429 },
  internal_error: { status: 500 },
  service_unavailable: { status: 503 },
  shard_unavailable: { status: 503 },
  group_moving: { status: 503 },
  dns_unavailable: { status: 503 },
} as const satisfies Record<string, { status: number }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];
export type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]["status"];

/** One problem of a failed call: the code to branch on, the field it concerns, and the text to show. */
export const ErrorDetail = z
  .object({
    code: openEnum(
      ERROR_CODE_NAMES,
      "Stable code to branch on (the guide's catalogue); an unknown one means what its HTTP status does.",
    ),
    field: z.string().optional().openapi({ description: "The field the problem concerns, when there is one" }),
    message: z.string().openapi({ description: "The same text as the matching entry of `errors`" }),
    amounts: z
      .object({ price: z.number().int(), balance: z.number().int() })
      .optional()
      .openapi({ description: "insufficient_means: what it costs and what the paying wallet holds, in cents" }),
  })
  .openapi("ErrorDetail", { example: { code: "ad_not_found", field: "adId", message: "adId: ad 7 not found" } });
/** A problem as the API writes it: its code one of this version's (the document admits later ones too). */
export type ErrorDetail = Omit<z.infer<typeof ErrorDetail>, "code"> & { code: ErrorCode };

/** Every message of the API starts with the field it concerns (`title: must be 5-60 characters`). */
const FIELD_PREFIX = /^([A-Za-z_][\w.[\]-]*): /;

/** The field a message in the API's words concerns: its leading `field:`, if it has one. */
export const fieldOf = (message: string): string | undefined => FIELD_PREFIX.exec(message)?.[1];

/** A problem from a message in the API's words; its field is the message's leading `field:`. */
export function detail(code: ErrorCode, message: string): ErrorDetail {
  const field = fieldOf(message);
  return field ? { code, field, message } : { code, message };
}

export interface DomainErrorOptions {
  /** The envelope's `data` (e.g. the deep health report). */
  data?: unknown;
  /** Seconds the caller should wait before trying again (Retry-After). */
  retryAfterSeconds?: number;
  /** Extra response headers, for the HTTP layer's own errors (WWW-Authenticate, RateLimit). */
  headers?: Record<string, string>;
}

/**
 * A failure the caller should see, thrown by domain code and middleware alike. The error handler
 * answers it with the status of its first problem's code, `errors` (the messages) and `errorDetails`.
 */
export class DomainError extends Error {
  readonly details: ErrorDetail[];
  readonly options: DomainErrorOptions;

  constructor(details: ErrorDetail | ErrorDetail[], options: DomainErrorOptions = {}) {
    const list = Array.isArray(details) ? details : [details];
    super(list.map((d) => d.message).join("; "));
    this.details = list;
    this.options = options;
  }

  /** One code for every message: `DomainError.of("ad_not_found", "adId: ad 5 not found")`. */
  static of(code: ErrorCode, ...messages: string[]) {
    return new DomainError(messages.map((message) => detail(code, message)));
  }

  get code(): ErrorCode {
    return this.details[0]?.code ?? "internal_error";
  }

  get status(): ErrorStatus {
    return ERROR_CODES[this.code].status;
  }
}

export const validationFailed = (...messages: string[]) => DomainError.of("validation_failed", ...messages);
