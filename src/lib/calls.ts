/** What a call to the API is, by its method and path: where it lives, and whether it only reads. */

/** Where the API lives; resources answer under it. */
export const BASE_PATH = "/rest/v1";

/**
 * POSTs that only read (the contract makes them POST for their bodies): they keep no Idempotency-Key
 * answer, and the document offers no key for them. Paths below the base, by their first one or two segments.
 */
const READ_ONLY_POSTS = new Set(["groups", "attributes", "status", "statistics", "imagestatus", "publish/preflight"]);

/** Whether a call only reads: a GET, or one of the read-only POSTs (`path` with or without the base). */
export function onlyReads(method: string, path: string): boolean {
  if (method.toUpperCase() === "GET") return true;
  const [first = "", second = ""] = path.replace(BASE_PATH, "").split("/").filter(Boolean);
  return method.toUpperCase() === "POST" && (READ_ONLY_POSTS.has(first) || READ_ONLY_POSTS.has(`${first}/${second}`));
}
