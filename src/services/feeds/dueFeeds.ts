// The shard's minute: the feeds due, queued in their clients' lanes by turns of client.
import { and, eq, isNull, lt, lte, or, sql } from "drizzle-orm";
import { batchAll } from "../../db/client";
import { settledClient } from "../../db/directory";
import { byTurns } from "../../db/fairShare";
import { feeds } from "../../db/schema";
import type { JobContext } from "../shared/context";
import { sendFeedFetches } from "./fetching";
import { nextRunAfter, scheduleOf } from "./schedule";

/** A fetch queued this long ago and not ended is taken for lost (its job gone): the feed is queued again. */
export const FEED_QUEUED_LAPSE_MS = 30 * 60_000;

/**
 * Queues the fetch of up to `limit` feeds that are due and not paused, taken by turns of client (each
 * client's first, then each one's second…): a client with many feeds due at one minute delays only its
 * own. Each is claimed (its next run set, marked queued) before its job is sent, so a second cron finds
 * it taken; the fetch then runs in its client's lanes, within the client's share. Answers how many.
 */
export async function queueDueFeeds(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, now } = ctx;
  const lapse = new Date(now.getTime() - FEED_QUEUED_LAPSE_MS).toISOString();
  const due = await db
    .select()
    .from(feeds)
    .where(
      and(
        eq(feeds.paused, false),
        lte(feeds.nextRunAt, now.toISOString()),
        or(isNull(feeds.queuedAt), lt(feeds.queuedAt, lapse)),
        settledClient(feeds.clientId),
      ),
    )
    .orderBy(...byTurns(feeds.clientId, feeds.nextRunAt))
    .limit(input.limit);
  // Claimed in one batch: each only if no other cron took it meanwhile.
  const claims = due.map((feed) =>
    db
      .update(feeds)
      .set({ queuedAt: now.toISOString(), nextRunAt: nextRunAfter(scheduleOf(feed), now).toISOString() })
      .where(
        and(eq(feeds.id, feed.id), eq(feeds.nextRunAt, feed.nextRunAt), sql`${feeds.queuedAt} IS ${feed.queuedAt}`),
      )
      .returning({ id: feeds.id }),
  );
  const claimed = ((await batchAll(db, claims)) as { id: number }[][]).flat();
  await sendFeedFetches(ctx.env, { feedIds: claimed.map((row) => row.id), requestId: ctx.requestId });
  return claimed.length;
}
