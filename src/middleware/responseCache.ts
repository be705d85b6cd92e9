import type { Context } from "hono";
import { getDb } from "../db/client";
import { onShard, shardNumbers } from "../db/shards";
import type { AppEnv } from "../env";
import { sha256Hex } from "../lib/crypto";
import { entityTag } from "../lib/entityTags";
import { readEntityTag, readRevision, readRevisions } from "../services/shared";
import { requestShard } from "./d1Session";

/** How long a response may be served from the Workers Cache API when a client asks with `useCache=1`. */
export const CACHE_TTL_SECONDS = 30;

/**
 * Serves a lookup's answer from the Workers Cache API when `useCache` is set. The key holds the client (so a
 * tenant never sees another's answer), the revisions of the keys the response depends on, and the
 * request's path and query without `useCache`.
 */
export async function withCache<T extends object>(
  c: Context<AppEnv>,
  useCache: boolean | undefined,
  revisionKeys: string[],
  compute: () => Promise<T>,
  /** For POST lookups: the validated body, which then belongs to the key. */
  requestBody?: unknown,
): Promise<T> {
  if (!useCache) return compute();
  return cachedAnswer(c, await revisionsOf(c, revisionKeys), compute, requestBody);
}

/** The revisions of the keys on the request's shard, or on every shard for a list that spans them all. */
async function revisionsOf(c: Context<AppEnv>, revisionKeys: string[]): Promise<string> {
  const here = requestShard(c).shard;
  if (!c.var.spansShards) return readRevisions(getDb(here.d1), revisionKeys);
  const shards = shardNumbers(c.env);
  const each = await Promise.all(
    shards.map((shard) =>
      readRevisions(
        getDb(shard === here.number ? here.d1 : onShard(c.env, shard, "every shard in turn").shard.d1),
        revisionKeys,
      ),
    ),
  );
  return each.map((revisions, at) => `${shards[at]}:${revisions}`).join(";");
}

/** The answer under a key of the client, `revisions` (`key=revision,…`) and the request; computed on a miss. */
async function cachedAnswer<T extends object>(
  c: Context<AppEnv>,
  revisions: string,
  compute: () => Promise<T>,
  requestBody?: unknown,
): Promise<T> {
  const startedAt = Date.now();
  const url = new URL(c.req.url);
  url.searchParams.delete("useCache");
  if (requestBody !== undefined) url.searchParams.set("body", await sha256Hex(JSON.stringify(requestBody)));
  url.searchParams.sort();
  const key = new Request(
    `https://response-cache.internal/${c.get("client").id}/${encodeURIComponent(revisions)}${url.pathname.replace(/\/$/, "")}?${url.searchParams}`,
  );
  const cache = caches.default;
  const hit = await cache.match(key);
  if (hit) {
    const body = (await hit.json()) as T & { fromCache?: boolean; speed?: number };
    // List envelopes say where the response came from and how long it took.
    if ("fromCache" in body) body.fromCache = true;
    if ("speed" in body) body.speed = (Date.now() - startedAt) / 1000;
    return body;
  }
  const body = await compute();
  const stored = new Response(JSON.stringify(body), {
    headers: { "Content-Type": "application/json", "Cache-Control": `max-age=${CACHE_TTL_SECONDS}` },
  });
  c.executionCtx.waitUntil(cache.put(key, stored));
  return body;
}

/**
 * A read of a resource whose data moves with one revision key (a user's, a client's, a webhook's): its
 * ETag, then the answer (from the cache with `useCache`). The tag is read first, so it is never newer than
 * what the answer shows: a write conditional on it never passes over a change it did not show. One read
 * of the revision serves the tag and the cache key.
 */
export async function taggedRead<T extends object>(
  c: Context<AppEnv>,
  useCache: boolean | undefined,
  revisionKey: string,
  compute: () => Promise<T>,
): Promise<T> {
  const revision = await readRevision(getDb(requestShard(c).shard.d1), revisionKey);
  c.header("ETag", entityTag(revisionKey, revision));
  return useCache ? cachedAnswer(c, `${revisionKey}=${revision}`, compute) : compute();
}

/** The ETag of the data that moves with the revision key, on the answer; read before the data (`taggedRead`). */
export async function answerEntityTag(c: Context<AppEnv>, revisionKey: string) {
  c.header("ETag", await readEntityTag(getDb(requestShard(c).shard.d1), revisionKey));
}
