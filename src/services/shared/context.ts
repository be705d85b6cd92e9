import { type Db, getDb } from "../../db/client";
import type { ShardEnv } from "../../env";
import type { Precondition } from "../../lib/entityTags";
import { type Caller, callerOf } from "./access";

/** What a domain operation runs with: the database, the bindings, the caller and the request it serves. */
export interface ServiceContext {
  db: Db;
  /** The bindings, with the shard the request runs on named. */
  env: ShardEnv;
  caller: Caller;
  /** Public base of image URLs for this work (lib/media.ts mediaBaseOf). */
  mediaBase: string;
  /** The request id, carried into queue messages so their log lines can be tied to the request. */
  requestId?: string;
  /** A conditional write's `If-Match`: the write's revision bump checks it (revisions.ts `bumpRevisions`). */
  precondition?: Precondition;
}

/** What queue and cron work runs with: the database, the bindings, the request or cron run that caused it, and its clock. */
export interface JobContext {
  db: Db;
  /** The bindings, with the shard the work runs on named. */
  env: ShardEnv;
  requestId?: string | undefined;
  now: Date;
}

/** The context of a queue batch, or of work after a response (`waitUntil`), on the wall clock. */
export const jobContext = (env: ShardEnv, requestId?: string): JobContext => ({
  db: getDb(env.shard.d1),
  env,
  requestId,
  now: new Date(),
});

/** The job context of work a request does itself, on the wall clock. */
export const jobContextOf = (ctx: ServiceContext): JobContext => ({
  db: ctx.db,
  env: ctx.env,
  requestId: ctx.requestId,
  now: new Date(),
});

/**
 * What queued work runs with when it acts for a client (a sync's step, a feed's fetch): the client kept
 * with its row as the caller, and the row's base of image URLs.
 */
export const actingFor = (
  ctx: JobContext,
  row: { clientId: number; internal: boolean; partner: boolean; mediaBase: string },
): ServiceContext => ({
  db: ctx.db,
  env: ctx.env,
  caller: callerOf({ id: row.clientId, internal: row.internal, partner: row.partner }),
  mediaBase: row.mediaBase,
  requestId: ctx.requestId,
});
