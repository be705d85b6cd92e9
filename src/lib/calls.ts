/** What a call to the API is, by its method and path: where it lives, and whether it only reads. */

/** Where the API lives; resources answer under it. */
export const BASE_PATH = "/rest/v1";

/**
 * POSTs that only read (the contract makes them POST for their bodies): they keep no Idempotency-Key
 * answer, and the document offers no key for them. Paths below the base, by their first one or two segments.
 */
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

/** Whether a call only reads: a GET, or one of the read-only POSTs (`path` with or without the base). */
export function onlyReads(method: string, path: string): boolean {
  if (method.toUpperCase() === "GET") return true;
  const [first = "", second = ""] = path.replace(BASE_PATH, "").split("/").filter(Boolean);
  return method.toUpperCase() === "POST" && (READ_ONLY_POSTS.has(first) || READ_ONLY_POSTS.has(`${first}/${second}`));
}

/** Whether a call is `POST /syncs/`, which streams its body and keeps its Idempotency-Key with the sync it starts. */
export const startsSync = (method: string, path: string): boolean =>
  method.toUpperCase() === "POST" && path.replace(BASE_PATH, "").replace(/\/+$/, "") === "/syncs";

/** Whether a call reads a stock: `POST /syncs/` and its dry run, whose NDJSON is read as it arrives. */
export const readsStock = (method: string, path: string): boolean =>
  startsSync(method, path) ||
  (method.toUpperCase() === "POST" && path.replace(BASE_PATH, "").replace(/\/+$/, "") === "/syncs/preview");

/** The media type of a stock sent one item a line. */
export const NDJSON = "application/x-ndjson";

/** Whether a request's body is a stream of lines (NDJSON), read as it arrives rather than whole. */
export const streamsLines = (contentType: string | undefined): boolean =>
  (contentType ?? "").split(";")[0]?.trim().toLowerCase() === NDJSON;
