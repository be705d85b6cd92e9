import { z } from "@hono/zod-openapi";

/**
 * The error catalogue: every code a client can branch on, its HTTP status and what it means. Defined
 * once; the error handler, the OpenAPI document and the README's table are all read from here.
 */
export const ERROR_CODES = {
  validation_failed: { status: 400, description: "A field is missing, malformed or out of range; `field` names it." },
  malformed_body: { status: 400, description: "The body is not valid JSON." },
  unknown_field: {
    status: 400,
    description: "The body or query names a field the operation does not take (a misspelling is refused, not dropped).",
  },
  reference_not_found: {
    status: 400,
    description: "The body refers to something that does not exist for this user (an ad, contact, folder, image).",
  },
  invalid_activation_token: { status: 400, description: "The activation token is unknown, used or expired." },
  invalid_login_link: { status: 400, description: "The login link's access token is unknown, used or revoked." },
  oauth_state_mismatch: { status: 400, description: "The OAuth `state` does not match the authorization started." },
  oauth_code_refused: { status: 400, description: "The marketplace refused the authorization code." },
  missing_api_key: { status: 401, description: "No `Authorization: Bearer <key>` header." },
  invalid_api_key: { status: 401, description: "The API key is unknown or revoked." },
  internal_only: { status: 403, description: "A field or call reserved for internal clients." },
  route_not_found: { status: 404, description: "No route has this path." },
  user_not_found: { status: 404, description: "No such user, or a user of another client." },
  ad_not_found: { status: 404, description: "No such ad, or an ad of another client or user." },
  contact_not_found: { status: 404, description: "No such contact for the user." },
  folder_not_found: { status: 404, description: "No such folder for the user." },
  task_not_found: { status: 404, description: "No such scheduled task for the user." },
  manufacturer_not_found: { status: 404, description: "No such manufacturer for the user." },
  job_not_found: { status: 404, description: "No such job (queue item)." },
  webhook_not_found: { status: 404, description: "No such webhook endpoint." },
  delivery_not_found: { status: 404, description: "No such webhook delivery." },
  image_not_found: { status: 404, description: "No stored image at this media path." },
  portal_not_found: { status: 404, description: "The portal has no marketplace simulator here." },
  method_not_allowed: { status: 405, description: "The path exists for other methods; `Allow` lists them." },
  insufficient_means: {
    status: 409,
    description: "The wallet that pays cannot afford the charge; `amounts` gives the price and the balance (cents).",
  },
  ad_not_published: { status: 409, description: "The ad is not on the portal, so it cannot be updated or taken down." },
  ad_archived: { status: 409, description: "The ad is archived and cannot be published." },
  user_locked: { status: 409, description: "The user is locked; nothing is published for it." },
  portal_not_connected: { status: 409, description: "The user has not connected the portal (OAuth)." },
  portal_account_has_listings: {
    status: 409,
    description:
      "The user's listings on the portal are live (or its jobs still running) at another marketplace account than the one just authorized: unpublish them first, or connect that account.",
  },
  listing_incomplete: {
    status: 409,
    description: "The ad lacks data the portal requires (e.g. the manufacturer data of GPSR for portal_a).",
  },
  feature_not_available: { status: 409, description: "The feature is not sold for the ad's category on the portal." },
  oauth_not_started: { status: 409, description: "No authorization is in progress for the user and portal." },
  job_not_retryable: { status: 409, description: "Only the newest failed job of a listing can be retried." },
  max_images_reached: { status: 409, description: "The ad would have more images than the user's maxImages." },
  max_contacts_reached: { status: 409, description: "The user would have more contacts than maxContacts." },
  contact_in_use: { status: 409, description: "Active ads still use the contact." },
  external_user_id_taken: {
    status: 409,
    description: "Another user of the same client already has this externalUserId.",
  },
  webhook_limit_reached: {
    status: 409,
    description: "The client has as many webhook endpoints as it may (16); remove one first.",
  },
  webhook_exists: { status: 409, description: "The client already has an endpoint with this URL." },
  replay_in_progress: { status: 409, description: "A replay of this webhook endpoint is still being delivered." },
  idempotency_in_progress: {
    status: 409,
    description: "The first request with this Idempotency-Key is still running; retry after Retry-After.",
  },
  body_too_large: { status: 413, description: "The body exceeds 1 MiB." },
  unsupported_media_type: { status: 415, description: "The body is not `application/json`." },
  idempotency_conflict: { status: 422, description: "The Idempotency-Key was used with a different request." },
  rate_limited: { status: 429, description: "Too many requests; wait for Retry-After." },
  activation_limit_reached: { status: 429, description: "Too many activation tokens generated for the user." },
  internal_error: { status: 500, description: "An unexpected failure, logged with the request id." },
  service_unavailable: { status: 503, description: "A dependency the answer needs is failing." },
  dns_unavailable: {
    status: 503,
    description: "The DNS resolver did not answer, so the URL could not be checked; try again later.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];
export type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]["status"];

/** One problem of a failed call: the code to branch on, the field it concerns, and the text to show. */
export const ErrorDetail = z
  .object({
    code: z.enum(ERROR_CODE_NAMES).openapi({ description: "Stable code to branch on (see the README's catalogue)" }),
    field: z.string().optional().openapi({ description: "The field the problem concerns, when there is one" }),
    message: z.string().openapi({ description: "The same text as the matching entry of `errors`" }),
    amounts: z
      .object({ price: z.number().int(), balance: z.number().int() })
      .optional()
      .openapi({ description: "insufficient_means: what it costs and what the paying wallet holds, in cents" }),
  })
  .openapi("ErrorDetail", { example: { code: "ad_not_found", field: "adId", message: "adId: ad 7 not found" } });
export type ErrorDetail = z.infer<typeof ErrorDetail>;

/** Every message of the API starts with the field it concerns (`title: must be 5-60 characters`). */
const FIELD_PREFIX = /^([A-Za-z_][\w.[\]-]*): /;

/** A problem from a message in the API's words; its field is the message's leading `field:`. */
export function detail(code: ErrorCode, message: string): ErrorDetail {
  const field = FIELD_PREFIX.exec(message)?.[1];
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
