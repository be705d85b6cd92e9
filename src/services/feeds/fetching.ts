// A feed's fetch: its URL asked through the outbound guard, conditionally, and what it served handed to a sync.
import { eq, type SQL, sql } from "drizzle-orm";
import { batchAll } from "../../db/client";
import { type FeedFormat, feeds, syncs } from "../../db/schema";
import type { ShardEnv } from "../../env";
import { DomainError } from "../../lib/errors";
import { guardedFetch, OutboundRefused, outboundPolicy, ResolverUnavailable } from "../../lib/outbound";
import { outboundCall } from "../../lib/outboundClock";
import { open } from "../../lib/secretBox";
import { eventOf } from "../events/events";
import { actingFor, type JobContext } from "../shared/context";
import { syncIfChanged } from "../syncs";
import { type BodyLimits, feedStock } from "./formats";

/** A fetch's bounds: the wait for the answer, its body's (formats.ts), redirects, and the whole fetch. */
export interface FetchLimits extends BodyLimits {
  answerMs: number;
  maxRedirects: number;
  totalMs: number;
}

export const FEED_LIMITS: FetchLimits = {
  answerMs: 30_000,
  stallSeconds: 30,
  // A stock of 20,000 items (a sync's most) of 3 KiB each.
  maxBytes: 64 * 1024 * 1024,
  jsonMaxBytes: 1024 * 1024,
  maxRedirects: 3,
  totalMs: 10 * 60_000,
};

/** Queues feeds' fetches: lane jobs of their clients (`ClientLanes`), each run within its client's share. */
export async function sendFeedFetches(env: ShardEnv, input: { feedIds: number[]; requestId?: string | undefined }) {
  if (input.feedIds.length === 0) return;
  await env.JOBS.sendBatch(
    input.feedIds.map((feedId) => ({ body: { kind: "feed", feedId, requestId: input.requestId } })),
  );
}

/** Where a feed is served and how to ask for it: the fields a fetch reads. */
export interface FeedSource {
  url: string;
  format: FeedFormat;
  /** The header the fetch sends, its value open. */
  header: { name: string; value: string } | null;
  /** The validators of the body last applied, asked for conditionally. */
  etag?: string | null;
  lastModified?: string | null;
}

/** A fetch that ended without a stock: why, in a sentence, and the HTTP status when one came. */
export class FeedFailure extends Error {
  constructor(
    message: string,
    readonly httpStatus: number | null = null,
  ) {
    super(message);
  }
}

/**
 * The feed's answer: through the outbound guard (no private address, redirects checked), with the secret
 * header and the last body's validators, its headers within `answerMs`. A 304 or a 2xx is answered;
 * anything else is a FeedFailure naming it.
 */
export async function fetchFeed(
  env: ShardEnv,
  source: FeedSource,
  limits: FetchLimits,
  /** Ends the fetch, its body included (a stock its sync will not read). */
  stop?: AbortSignal,
): Promise<Response> {
  const headers = new Headers(source.header ? { [source.header.name]: source.header.value } : {});
  headers.set("Accept", ACCEPT[source.format]);
  if (source.etag) headers.set("If-None-Match", source.etag);
  if (source.lastModified) headers.set("If-Modified-Since", source.lastModified);
  const answered = new AbortController();
  const timer = setTimeout(
    () => answered.abort(new FeedFailure(`timeout: no answer within ${limits.answerMs / 1000} s`)),
    limits.answerMs,
  );
  let response: Response;
  try {
    response = await guardedFetch(source.url, outboundPolicy(env), {
      timeoutMs: limits.totalMs,
      maxRedirects: limits.maxRedirects,
      headers,
      signal: stop ? AbortSignal.any([answered.signal, stop]) : answered.signal,
    });
  } catch (error) {
    if (answered.signal.aborted) throw answered.signal.reason;
    if (error instanceof OutboundRefused) throw new FeedFailure(`refused: ${error.message}`);
    if (error instanceof ResolverUnavailable) throw new FeedFailure(`not reached: ${error.message}`);
    throw new FeedFailure(`not reached: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    clearTimeout(timer);
  }
  if (response.status === 304 || (response.ok && response.body)) return response;
  await response.body?.cancel();
  throw new FeedFailure(`HTTP ${response.status}: the feed answered ${response.status}`, response.status);
}

const ACCEPT: Record<FeedFormat, string> = {
  ndjson: "application/x-ndjson, application/jsonl, text/plain;q=0.5",
  json: "application/json",
  csv: "text/csv, text/plain;q=0.5",
};

/** A failure of a stock's reading or sync as the feed tells it: too large, a stall, a line, the guard. */
export function failureOf(error: unknown): FeedFailure | undefined {
  if (error instanceof FeedFailure) return error;
  if (error instanceof DomainError) {
    const [first] = error.details;
    const text = error.details.map((problem) => problem.message).join("; ");
    switch (first?.code) {
      case "body_too_large":
        return new FeedFailure(`too large: ${text}`, 200);
      case "upload_stalled":
        return new FeedFailure(`timeout: ${text.replace(/; the sync ended.*$/, "")}`, 200);
      case "malformed_body":
      case "validation_failed":
      case "unknown_field":
        return new FeedFailure(`not parseable: ${text}`, 200);
      case "sync_would_end_too_many":
        return new FeedFailure(`the guard: ${text}`, 200);
      case "sync_in_progress":
      case "sync_lapsed":
        return new FeedFailure(`not applied: ${text}`, 200);
      case "user_not_found":
        return new FeedFailure("the feed's user is no longer there");
      default:
        return undefined;
    }
  }
  if (error instanceof Error && error.name === "TimeoutError")
    return new FeedFailure("timeout: the fetch took longer than it may");
  return undefined;
}

/** What a fetch did: a sync started, nothing changed, or a failure. */
type FetchOutcome =
  | { outcome: "fetched" | "unchanged"; httpStatus: number; bytes: number; items: number | null; syncId: number | null }
  | { outcome: "failed"; failure: FeedFailure; bytes: number };

/**
 * A feed's fetch, as its client's lane runs it (queued by the cron or `POST /feeds/<id>/run`): the body
 * asked for conditionally; a 304, or the bytes of the last stock applied, start no sync; otherwise the
 * stock goes to a sync exactly as `POST /syncs/` takes it (its limits, report, guard and charges). What
 * happened is kept on the feed with an event; a feed that fails FEED_MAX_FAILURES times in a row pauses.
 * Errors that are not the feed's (D1 failing) are thrown: the lane runs the job again.
 */
export async function runFeedFetch(
  ctx: JobContext,
  input: {
    feedId: number;
    /** The fetch's bounds (tests give a short wait); FEED_LIMITS unless given. */
    limits?: FetchLimits;
  },
): Promise<void> {
  const limits = input.limits ?? FEED_LIMITS;
  // The feed, and the state of the sync its last applied body started.
  const row = await ctx.db
    .select({ feed: feeds, appliedState: syncs.state })
    .from(feeds)
    .leftJoin(syncs, eq(syncs.id, feeds.appliedSyncId))
    .where(eq(feeds.id, input.feedId))
    .get();
  if (!row?.feed.queuedAt) return;
  const { feed } = row;
  const work = actingFor(ctx, feed);
  // The last body applied, unless its sync failed: then the same bytes are applied again.
  const lastDigest = row.appliedState === "failed" ? null : feed.digest;
  let bytesRead = () => 0;
  let validators = { etag: feed.etag, lastModified: feed.lastModified };
  const stop = new AbortController();
  const fetched = await outboundCall(async (): Promise<FetchOutcome> => {
    try {
      const header =
        feed.headerName && feed.headerValue
          ? { name: feed.headerName, value: await open(feed.headerValue, ctx.env) }
          : null;
      // Validators only of a body applied: a fetch after a failed one asks for the whole body.
      const response = await fetchFeed(
        ctx.env,
        { ...feed, header, ...(lastDigest ? validators : { etag: null, lastModified: null }) },
        limits,
        stop.signal,
      );
      validators = {
        etag: response.headers.get("ETag"),
        lastModified: response.headers.get("Last-Modified"),
      };
      if (response.status === 304)
        return { outcome: "unchanged", httpStatus: 304, bytes: 0, items: null, syncId: null };
      const { stock, bytes } = feedStock(response.body as ReadableStream<Uint8Array>, feed.format, limits);
      bytesRead = bytes;
      const { sync, items, digest } = await syncIfChanged(work, {
        options: { userId: feed.userId, removal: feed.removal, maxEndedPercent: feed.maxEndedPercent },
        stock,
        lastDigest,
      });
      feed.digest = digest;
      return {
        outcome: sync ? "fetched" : "unchanged",
        httpStatus: response.status,
        bytes: bytes(),
        items,
        syncId: sync?.syncId ?? null,
      };
    } catch (error) {
      // A body not read to its end (the sync refused before it read a line) is not left open, nor kept
      // for a reader that will not come.
      stop.abort();
      const failure = failureOf(error);
      if (!failure) throw error;
      return { outcome: "failed", failure, bytes: bytesRead() };
    }
  });
  await batchAll(ctx.db, recorded(ctx, feed, fetched, { ...validators, digest: feed.digest }));
}

/** A fetch whose job kept failing (the lanes gave it up): a failure of the feed's, no longer queued. */
export async function failFeedFetch(ctx: JobContext, input: { feedId: number }): Promise<void> {
  const feed = await ctx.db.select().from(feeds).where(eq(feeds.id, input.feedId)).get();
  if (!feed?.queuedAt) return;
  const failure = new FeedFailure("the fetch failed after repeated attempts");
  await batchAll(ctx.db, recorded(ctx, feed, { outcome: "failed", failure, bytes: 0 }, feed));
}

/** Failed fetches in a row after which a feed pauses itself. */
export const FEED_MAX_FAILURES = 5;

/** A fetch's outcome kept on the feed (the next fetch no longer queued), with its events. */
function recorded(
  ctx: JobContext,
  feed: typeof feeds.$inferSelect,
  fetched: FetchOutcome,
  applied: { etag: string | null; lastModified: string | null; digest: string | null },
) {
  const { db } = ctx;
  const at = new Date().toISOString();
  const last = { queuedAt: null, lastFetchAt: at, lastBytes: fetched.bytes, updatedAt: at };
  if (fetched.outcome !== "failed") {
    const event = fetched.outcome === "fetched" ? "feed.fetched" : "feed.unchanged";
    return [
      db
        .update(feeds)
        .set({
          ...last,
          ...(fetched.outcome === "fetched" || fetched.httpStatus !== 304 ? applied : {}),
          ...(fetched.outcome === "fetched" ? { appliedSyncId: fetched.syncId } : {}),
          failures: 0,
          lastOutcome: fetched.outcome,
          lastHttpStatus: fetched.httpStatus,
          lastItems: fetched.items,
          lastSyncId: fetched.syncId,
          lastFailure: null,
        })
        .where(eq(feeds.id, feed.id)),
      eventOf(db, {
        type: event,
        userId: feed.userId,
        data: sql`json_object('feedId', ${feed.id}, 'httpStatus', ${fetched.httpStatus}, 'bytes', ${fetched.bytes}, 'items', ${fetched.items}, 'syncId', ${fetched.syncId})`,
      }),
    ];
  }
  const { failure } = fetched;
  // A sync of the user under way is no failure of the feed's: it is told, and not counted.
  const counted = !failure.message.startsWith("not applied:");
  const failures = feed.failures + (counted ? 1 : 0);
  const pausing = counted && failures >= FEED_MAX_FAILURES && !feed.paused;
  const pausedReason = `paused after ${failures} failed fetches in a row; the last: ${failure.message}`;
  const data = (extra: SQL) =>
    sql`json_object('feedId', ${feed.id}, 'reason', ${failure.message}, 'httpStatus', ${failure.httpStatus}, 'failures', ${failures}${extra})`;
  return [
    db
      .update(feeds)
      .set({
        ...last,
        failures,
        lastOutcome: "failed",
        lastHttpStatus: failure.httpStatus,
        lastItems: null,
        lastSyncId: null,
        lastFailure: failure.message,
        ...(pausing ? { paused: true, pausedReason } : {}),
      })
      .where(eq(feeds.id, feed.id)),
    eventOf(db, {
      type: "feed.failed",
      userId: feed.userId,
      data: data(sql`, 'paused', json(${pausing ? "true" : "false"})`),
    }),
    ...(pausing ? [eventOf(db, { type: "feed.paused", userId: feed.userId, data: data(sql``) })] : []),
  ];
}
