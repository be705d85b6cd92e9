import type { Context, MiddlewareHandler } from "hono";
import { meterSession } from "../db/meter";
import { onShard, shardDatabase } from "../db/shards";
import type { AppEnv, ShardEnv } from "../env";
import { DomainError } from "../lib/errors";
import { takeIpToken } from "./rateLimit";
import { shardOfRequest } from "./shardRouting";

export const BOOKMARK_HEADER = "x-d1-bookmark";
/**
 * D1's bookmark format, as D1 writes it: three 8-digit and one 32-digit group of lower-case hex; or empty,
 * as a client without one yet may send the header (the document states this pattern).
 */
export const BOOKMARK = /^([0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32})?$/;

/** Refuses a malformed bookmark before the key is known: it costs the address's budget, as a bad key does. */
export const d1Bookmark: MiddlewareHandler<AppEnv> = async (c, next) => {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  if (bookmark !== undefined && !BOOKMARK.test(bookmark)) {
    await takeIpToken(c);
    throw DomainError.of("validation_failed", `${BOOKMARK_HEADER}: not a D1 bookmark`);
  }
  await next();
};

/**
 * D1 Sessions (read replication): a GET may be answered by a nearby read replica, a write goes to the
 * primary. Every answer carries the session's bookmark in `x-d1-bookmark`; a client that sends it back
 * reads at least what that answer saw, so it reads its own writes wherever it is served. The request's
 * handlers and services see the session as their shard's database (`requestShard`), metered: the rows it read and wrote are the
 * request's `d1Usage`, which the request context reports. The session is on the shard of the request's rows
 * (`shardOfRequest`), so this runs after authentication and the body limit (and `d1Bookmark` before them).
 */
export const d1Session: MiddlewareHandler<AppEnv> = async (c, next) => {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  const constraint = c.req.method === "GET" ? "first-unconstrained" : "first-primary";
  const { shard, why, spansShards } = await shardOfRequest(c);
  c.set("spansShards", spansShards);
  const session = shardDatabase(c.env, shard).withSession(bookmark || constraint);
  c.set("d1Session", session);
  c.set("d1Usage", meterSession(session));
  // A session speaks prepare and batch, all a request uses; exec and dump stay with the binding.
  c.set("shardEnv", onShard(c.env, shard, why, session as unknown as D1Database));
  await next();
  const reached = session.getBookmark();
  if (reached) c.header(BOOKMARK_HEADER, reached);
};

/**
 * The request's shard for the work it leaves running after its answer (webhook dispatch, requested
 * updates): a D1 session of its own that reads at least what the request wrote, and is not the request's
 * metered one, so the rows a request reports are its own whenever the background work's queries land.
 */
export function backgroundShard(c: Context<AppEnv>): ShardEnv {
  const { number, why } = requestShard(c).shard;
  const bookmark = c.var.d1Session?.getBookmark() ?? "first-primary";
  return onShard(c.env, number, why, shardDatabase(c.env, number).withSession(bookmark) as unknown as D1Database);
}

/** The request's shard, named, with its D1 session: what every handler and service works on. */
export function requestShard(c: Context<AppEnv>): ShardEnv {
  const shardEnv = c.var.shardEnv;
  if (!shardEnv) throw new Error("the request's shard is not known yet: d1Session runs before this");
  return shardEnv;
}
