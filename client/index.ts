/**
 * A typed client of the Classified Advertisement Management API: paths, parameters, bodies and answers
 * come from the committed OpenAPI document (`npm run client:generate` refreshes schema.d.ts), calls go
 * through openapi-fetch. Every write carries an Idempotency-Key unless one is given (the POSTs that only
 * read carry none), so a retried write is applied once; 429 and 503 answers are retried with backoff,
 * honouring Retry-After; every request carries the newest `x-d1-bookmark` answered, so the client reads
 * its own writes.
 */
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { paths } from "./schema.js";

export interface ApiClientOptions {
  /** The API's origin, e.g. `http://localhost:8787` (paths include `/rest/v1`). */
  baseUrl: string;
  /** The client's API key, sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Attempts after the first for 429 and 503 answers (default 3). */
  retries?: number;
  /** The longest wait between attempts, in milliseconds (default 30 s). */
  maxDelayMs?: number;
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Read your own writes (default true): every request carries the newest `x-d1-bookmark` this client
   * was answered, so it reads at least what its earlier calls wrote, whichever database replica serves
   * it. Set false for a client shared by unrelated callers that do not need it.
   */
  readYourWrites?: boolean;
}

const BOOKMARK = "x-d1-bookmark";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** POSTs that only read (their operations take no Idempotency-Key): by their first one or two segments below /rest/v1. */
const READ_ONLY_POSTS = new Set(["groups", "attributes", "status", "statistics", "imagestatus", "publish/preflight"]);

/** Whether a request changes something, and so carries an Idempotency-Key. */
function isWrite(request: Request): boolean {
  if (!WRITES.has(request.method)) return false;
  const [first = "", second = ""] = new URL(request.url).pathname
    .replace(/^\/rest\/v1/, "")
    .split("/")
    .filter(Boolean);
  return !(request.method === "POST" && (READ_ONLY_POSTS.has(first) || READ_ONLY_POSTS.has(`${first}/${second}`)));
}

const RETRIED = new Set([429, 503]);

/** Seconds of Retry-After, or exponential backoff from 0.5 s when the answer names none. */
export function retryDelayMs(response: Response, attempt: number, maxDelayMs: number): number {
  const header = response.headers.get("Retry-After");
  const seconds = header === null || header.trim() === "" ? Number.NaN : Number(header);
  const delay = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 500 * 2 ** attempt;
  return Math.min(delay, maxDelayMs);
}

/** A fetch that sends a request again (the same Idempotency-Key with it) while it answers 429 or 503. */
function retrying(fetch: (request: Request) => Promise<Response>, retries: number, maxDelayMs: number) {
  return async (request: Request): Promise<Response> => {
    for (let attempt = 0; ; attempt += 1) {
      const response = await fetch(request.clone());
      if (!RETRIED.has(response.status) || attempt >= retries) return response;
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs(response, attempt, maxDelayMs)));
    }
  };
}

export function createApiClient(options: ApiClientOptions) {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retrying(send, options.retries ?? 3, options.maxDelayMs ?? 30_000),
  });
  // The newest bookmark this client instance was answered (per instance: never shared between clients).
  let bookmark: string | undefined;
  const authentication: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${options.apiKey}`);
      if (isWrite(request) && !request.headers.has("Idempotency-Key"))
        request.headers.set("Idempotency-Key", crypto.randomUUID());
      if (bookmark && options.readYourWrites !== false && !request.headers.has(BOOKMARK))
        request.headers.set(BOOKMARK, bookmark);
      return request;
    },
    onResponse({ response }) {
      bookmark = response.headers.get(BOOKMARK) ?? bookmark;
      return response;
    },
  };
  client.use(authentication);
  return client;
}

export type ApiClient = ReturnType<typeof createApiClient>;

/** An error response of the API: its status, the messages and the same problems with their codes and fields. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorDetails: components["schemas"]["ErrorDetail"][],
    messages: string[],
  ) {
    super(messages.join("; ") || `HTTP ${status}`);
  }
}

export type PreflightRequest = components["schemas"]["PreflightRequest"];
export type Preflight = components["schemas"]["Preflight"];
export type PreflightVerdict = components["schemas"]["PreflightVerdict"];

/**
 * A dry run of publishing (POST /rest/v1/publish/preflight): per ad and target, what a publish call would
 * come to (placement, update, queued, refused with codes and fields, or unverified), the price, the
 * connection's state, and the paying wallet before and after. Nothing is queued, charged or listed.
 * Throws an `ApiError` when the call itself is refused (an unknown user, more than 100 ads).
 */
export async function preflight(client: ApiClient, body: PreflightRequest): Promise<Preflight> {
  const { data, error, response } = await client.POST("/rest/v1/publish/preflight", { body });
  if (data) return data.data;
  const failure = error as { errors?: string[]; errorDetails?: ApiError["errorDetails"] } | undefined;
  throw new ApiError(response.status, failure?.errorDetails ?? [], failure?.errors ?? []);
}
