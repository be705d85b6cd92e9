/**
 * A typed client of the Classified Advertisement Management API: paths, parameters, bodies and answers
 * come from the committed OpenAPI document (`npm run client:generate` refreshes schema.d.ts), calls go
 * through openapi-fetch. Every write carries an Idempotency-Key unless one is given (the POSTs that only
 * read carry none; a call given `""` is sent without one), so a retried write is applied once; 429 and 503 answers are retried after their
 * Retry-After plus a full-jitter backoff, so clients told the same Retry-After do not all come back at
 * once; at most `maxConcurrent` requests are in flight; every request carries the newest `x-d1-bookmark`
 * answered, so the client reads its own writes. Every component schema is a named type (`Ad`, `Event`,
 * `ErrorDetail`, `PublishActiveEvent`, …), and the helpers below do the chores: `dataOf`, `listAll`, `waitForJob`,
 * `publish`, `verifyWebhook`, `preflight`, `previewSync`, `syncStock`.
 */
import createClient, { type Middleware } from "openapi-fetch";
import { Webhook } from "standardwebhooks";
import type { Ad, components, Event, Job, paths, SimpleAd, Sync, SyncItem, WebhookTestData } from "./schema.js";

export type * from "./schema.js";

export interface ApiClientOptions {
  /** The API's origin, e.g. `http://localhost:8787` (paths include `/rest/v1`). */
  baseUrl: string;
  /** The client's API key, sent as `Authorization: Bearer <key>`. */
  apiKey: string;
  /** Attempts after the first for 429 and 503 answers (default 3). */
  retries?: number;
  /** The longest wait between attempts, in milliseconds (default 30 s). */
  maxDelayMs?: number;
  /** Requests in flight at once; the others wait their turn (default 6). */
  maxConcurrent?: number;
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
const READ_ONLY_POSTS = new Set([
  "groups",
  "attributes",
  "status",
  "statistics",
  "imagestatus",
  "publish/preflight",
  "syncs/preview",
  "feeds/preview",
]);

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

/**
 * How long to wait before attempt `attempt + 1`: the answer's Retry-After (seconds), plus a full-jitter
 * backoff, a random wait between 0 and 0.5 s × 2^attempt; at most `maxDelayMs`. `random` is Math.random
 * unless a test gives its own.
 */
export function retryDelayMs(response: Response, attempt: number, maxDelayMs: number, random = Math.random): number {
  const header = response.headers.get("Retry-After");
  const seconds = header === null || header.trim() === "" ? Number.NaN : Number(header);
  const told = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 0;
  const jitter = random() * Math.min(500 * 2 ** attempt, maxDelayMs);
  return Math.min(told + jitter, maxDelayMs);
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

/** A fetch that lets at most `limit` requests be in flight; the rest wait in the order they came. */
function limited(fetch: (request: Request) => Promise<Response>, limit: number) {
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  return async (request: Request): Promise<Response> => {
    if (inFlight >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    inFlight += 1;
    try {
      return await fetch(request);
    } finally {
      inFlight -= 1;
      waiting.shift()?.();
    }
  };
}

export function createApiClient(options: ApiClientOptions) {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: retrying(limited(send, options.maxConcurrent ?? 6), options.retries ?? 3, options.maxDelayMs ?? 30_000),
  });
  // The newest bookmark this client instance was answered (per instance: never shared between clients).
  let bookmark: string | undefined;
  const authentication: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${options.apiKey}`);
      // A call that sends `Idempotency-Key: ""` asks for none: the write is then sent without a key.
      if (request.headers.get("Idempotency-Key") === "") request.headers.delete("Idempotency-Key");
      else if (isWrite(request) && !request.headers.has("Idempotency-Key"))
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
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly errorDetails: components["schemas"]["ErrorDetail"][],
    messages: string[],
  ) {
    super(messages.join("; ") || `HTTP ${status}`);
  }
}

/** The error of a failed call, as an `ApiError`. */
function apiErrorOf(response: Response, error: unknown): ApiError {
  const failure = error as { errors?: string[]; errorDetails?: ApiError["errorDetails"] } | undefined;
  return new ApiError(response.status, failure?.errorDetails ?? [], failure?.errors ?? []);
}

/**
 * The `data` of a call's answer, or its error thrown as an `ApiError`: what a careful caller does with
 * every answer, in one step. `const [user] = dataOf(await api.GET("/rest/v1/users/{userId}", …))`.
 */
export function dataOf<T>(answer: { data?: { data: T }; error?: unknown; response: Response }): T {
  if (answer.data) return answer.data.data;
  throw apiErrorOf(answer.response, answer.error);
}

/**
 * An answer's whole page: `data` with the list's paging fields beside it (the event feed's `cursor`,
 * `nextCursor`, `totalItems`, …), which `dataOf` leaves out; or the `ApiError` of a refusal.
 */
export function pageOf<T extends { data: unknown }>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data) return answer.data;
  throw apiErrorOf(answer.response, answer.error);
}

/**
 * The ids of the jobs a write queued (a publish, a feature purchase, a retry): its `Job-Ids` header, or the
 * job its `Location` names; none for a write that queued nothing.
 */
export function jobIdsOf(answer: { response: Response }): number[] {
  const { headers } = answer.response;
  const listed = (headers.get("Job-Ids") ?? "").split(",").filter(Boolean).map(Number);
  if (listed.length > 0) return listed;
  const location = /\/jobs\/(\d+)\/?$/.exec(headers.get("Location") ?? "");
  return location ? [Number(location[1])] : [];
}

/**
 * The contact a POST /rest/v1/contacts call created: the call answers the user's whole list (as the
 * contract has it), and the new contact is its newest (the highest `contactId`).
 */
export function createdContact(answer: {
  data?: { data: components["schemas"]["Contact"][] };
  error?: unknown;
  response: Response;
}): components["schemas"]["Contact"] {
  const newest = [...dataOf(answer)].sort((a, b) => b.contactId - a.contactId)[0];
  if (!newest) throw new Error("the answer lists no contact");
  return newest;
}

/**
 * A dry run of publishing (POST /rest/v1/publish/preflight): per ad and target, what a publish call would
 * come to (placement, update, queued, refused with codes and fields, or unverified), the price, the
 * connection's state, and the paying wallet before and after. Nothing is queued, charged or listed.
 * Throws an `ApiError` when the call itself is refused (an unknown user, more than 100 ads).
 */
export async function preflight(
  client: ApiClient,
  body: components["schemas"]["PreflightRequest"],
): Promise<components["schemas"]["Preflight"]> {
  const { data, error, response } = await client.POST("/rest/v1/publish/preflight", { body });
  if (data) return data.data;
  throw apiErrorOf(response, error);
}

/**
 * Publishes one ad to one target (POST /rest/v1/publish): the ids of the jobs it queued (or found open,
 * for a repeat), from the `Job-Ids` header. Throws an `ApiError` with the refusal's codes.
 */
export async function publish(client: ApiClient, body: components["schemas"]["PublishAd"]): Promise<number[]> {
  const { data, error, response } = await client.POST("/rest/v1/publish", { body });
  if (!data) throw apiErrorOf(response, error);
  return jobIdsOf({ response });
}

/** The states in which a job still has work to do. */
const OPEN_JOB_STATES: readonly string[] = ["pending", "processing"];

/**
 * Waits for a job to end (done, error or cancelled), asking GET /rest/v1/jobs/<id> every `intervalMs`
 * (default 1 s); answers the ended job. Throws an `ApiError` if the job cannot be read, and an `Error` when
 * it has not ended within `timeoutMs` (default 60 s).
 */
export async function waitForJob(
  client: ApiClient,
  queueItemId: number,
  { timeoutMs = 60_000, intervalMs = 1_000 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Job> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { data, error, response } = await client.GET("/rest/v1/jobs/{queueItemId}", {
      params: { path: { queueItemId } },
    });
    if (!data) throw apiErrorOf(response, error);
    if (!OPEN_JOB_STATES.includes(data.data.state)) return data.data;
    if (Date.now() + intervalMs > until)
      throw new Error(`job ${queueItemId} still ${data.data.state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A stock sync's options: whose stock, what happens to the ads it no longer holds, and how many it may end. */
export interface SyncOptions {
  userId: number;
  /** `delete` (default) or `archive` the synced ads the stock no longer holds, once they are off every target. */
  removal?: "delete" | "archive";
  /** The most of the user's synced ads the sync may end, in percent (default 20); more refuses the sync. */
  maxEndedPercent?: number;
}

/** A stock as NDJSON, one item a line: the body of POST /syncs and /syncs/preview (never one JSON document). */
const ndjsonOf = (items: Iterable<SyncItem>) =>
  new Blob(
    Array.from(items, (item) => `${JSON.stringify(item)}\n`),
    { type: "application/x-ndjson" },
  );

const syncQuery = (options: SyncOptions) => ({
  userId: String(options.userId),
  ...(options.removal ? { removal: options.removal } : {}),
  ...(options.maxEndedPercent !== undefined ? { maxEndedPercent: String(options.maxEndedPercent) } : {}),
});

/** How a stock travels: as NDJSON, with its media type (openapi-fetch serialises only a body it is given). */
const asNdjson = (items: Iterable<SyncItem>) => ({
  body: { items: [] } as never,
  bodySerializer: () => ndjsonOf(items),
  headers: { "Content-Type": "application/x-ndjson" },
});

/**
 * The dry run of a stock sync (POST /rest/v1/syncs/preview): how many items it would create, update,
 * leave unchanged and end, per target the placements, updates and removals with their price, and each
 * refused item with its fields. Nothing changes. Throws an `ApiError` when the call is refused.
 */
export async function previewSync(
  client: ApiClient,
  options: SyncOptions & { items: Iterable<SyncItem> },
): Promise<components["schemas"]["SyncPlan"]> {
  const { data, error, response } = await client.POST("/rest/v1/syncs/preview", {
    params: { query: syncQuery(options) as never },
    ...asNdjson(options.items),
  });
  if (data) return data.data;
  throw apiErrorOf(response, error);
}

/**
 * Syncs a user's whole stock (POST /rest/v1/syncs, the items sent as NDJSON) and waits for the sync to
 * end, asking GET /rest/v1/syncs/<id> every `intervalMs` (default 1 s); answers the ended sync (its
 * report per item: GET /rest/v1/syncs/<id>/items). The write carries an Idempotency-Key (a retry is
 * answered with the same sync). Throws an `ApiError` when the sync is refused (another sync of the user
 * under way, too many ads ended), and an `Error` when it has not ended within `timeoutMs` (default 10 min).
 */
export async function syncStock(
  client: ApiClient,
  options: SyncOptions & { items: Iterable<SyncItem> },
  { timeoutMs = 600_000, intervalMs = 1_000 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Sync> {
  const started = await client.POST("/rest/v1/syncs", {
    params: { query: syncQuery(options) as never },
    ...asNdjson(options.items),
  });
  if (!started.data) throw apiErrorOf(started.response, started.error);
  const { syncId } = started.data.data;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { data, error, response } = await client.GET("/rest/v1/syncs/{syncId}", { params: { path: { syncId } } });
    if (!data) throw apiErrorOf(response, error);
    if (data.data.state !== "running" && data.data.state !== "receiving") return data.data;
    if (Date.now() + intervalMs > until)
      throw new Error(`sync ${syncId} still ${data.data.state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The GET operations that answer a list (`data` an array), by path. */
export type ListPath = {
  [P in keyof paths]: paths[P] extends {
    get: { responses: { 200: { content: { "application/json": { data: unknown[] } } } } };
  }
    ? P
    : never;
}[keyof paths];
/** One item of a list operation's `data`. */
export type ListItem<P extends ListPath> = paths[P] extends {
  get: { responses: { 200: { content: { "application/json": { data: (infer T)[] } } } } };
}
  ? T
  : never;
/** What a list call takes: its path parameters and its query (paging included). */
export interface ListParams {
  path?: Record<string, string | number>;
  query?: Record<string, string | number | boolean | readonly number[] | undefined>;
}
/**
 * One item of a list, as the call asks for it: GET /ads/ answers `SimpleAd` items with `simple: true` and
 * whole `Ad` items without; every other list its one item type.
 */
export type ListItemOf<P extends ListPath, Params> = P extends "/rest/v1/ads"
  ? Params extends { query: { simple: true } }
    ? SimpleAd
    : Ad
  : ListItem<P>;

/**
 * Every item of a GET list, page after page, in each list's own paging convention: `/ads/` follows
 * `nextCursor` (sent back as `cursor`, which seeks however deep the list is), `/events/` follows `cursor`
 * (sent back as `after`) until a page is empty, and the others ask `page=2, 3, …` until `totalItems` is
 * reached. `for await (const ad of listAll(api, "/rest/v1/ads", { query: { userId } }))`.
 */
export async function* listAll<P extends ListPath, const Params extends ListParams = Record<never, never>>(
  client: ApiClient,
  path: P,
  params?: Params,
): AsyncGenerator<ListItemOf<P, Params>> {
  let query = { ...params?.query };
  const get = client.GET as unknown as (
    path: string,
    init: { params: ListParams },
  ) => Promise<{
    data?: Record<string, unknown> & { data: ListItemOf<P, Params>[] };
    error?: unknown;
    response: Response;
  }>;
  for (;;) {
    const { data, error, response } = await get(path, { params: { ...params, query } });
    if (!data) throw apiErrorOf(response, error);
    yield* data.data;
    if ("nextCursor" in data || path === "/rest/v1/ads") {
      if (typeof data.nextCursor !== "string") return;
      const { page: _page, ...rest } = query;
      query = { ...rest, cursor: data.nextCursor };
    } else if (typeof data.cursor === "number") {
      if (data.data.length === 0) return;
      query = { ...query, after: data.cursor };
    } else {
      const page = Number(data.page ?? 1);
      if (data.data.length === 0 || page * Number(data.itemsPerPage) >= Number(data.totalItems)) return;
      query = { ...query, page: page + 1 };
    }
  }
}

/**
 * A webhook delivery's body, typed by its `type`: the event (as the feed shows it), or a test message.
 * Typed by the event types of this version; a type added later within /v1 arrives as well (the document's
 * `LaterEvent`), so a handler ignores a `type` it does not know.
 */
/** The members of a union whose `type` is one literal: `Event`'s types of this version, not `LaterEvent`. */
type OfKnownType<E> = E extends { type: infer T } ? (string extends T ? never : E) : never;
type KnownEvent = OfKnownType<Event>;

export type WebhookPayload =
  | {
      [T in KnownEvent["type"]]: { type: T; timestamp: string; data: Extract<KnownEvent, { type: T }> };
    }[KnownEvent["type"]]
  | { type: "webhook.test"; timestamp: string; data: WebhookTestData };

/**
 * Checks a webhook delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`, within five minutes) with the endpoint's secret (`whsec_…`, either of the two
 * during a rotation), and answers its payload, typed by event: narrow on `payload.type`. Throws when the
 * signature or the timestamp does not hold; give it the body exactly as received. The headers as fetch
 * has them (`Headers`), or as Node's `http` does (`IncomingHttpHeaders`: lower-case names, a list for a
 * repeated header).
 */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined> | Headers,
  body: string,
): WebhookPayload {
  const plain: Record<string, string> = {};
  if (headers instanceof Headers)
    headers.forEach((value, name) => {
      plain[name] = value;
    });
  else
    for (const [name, value] of Object.entries(headers))
      if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  return new Webhook(secret).verify(body, plain) as WebhookPayload;
}
