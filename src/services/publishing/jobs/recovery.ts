import { and, eq, inArray, lte } from "drizzle-orm";
import { batchAll, type Db, namedBatch, statementsOf } from "../../../db/client";
import { settledUser } from "../../../db/directory";
import { inList } from "../../../db/inList";
import { apiClients, jobIsOpen, publishJobs, users } from "../../../db/schema";
import { nowIso } from "../../../lib/time";
import type { JobContext } from "../../shared/context";
import { noImageOpen, transition } from "./lifecycle";
import { publishMessage, sendJobs } from "./queue";
import { runPublishJobs } from "./run";
import type { PublishJobRow } from "./states";

/** A pending job this long past its expected delivery has lost its message. */
export const RESEND_AFTER_MS = 2 * 60_000;
/** A job runs for seconds; a job processing this long belongs to a consumer that died. */
export const STUCK_AFTER_MS = 5 * 60_000;

/**
 * The placements and updates of an ad that waited for its images (`noImageOpen`), sent once no image job
 * of the ad is open: the last image job to end calls it. Answers how many were sent.
 */
export async function sendJobsAwaitingImages(ctx: JobContext, input: { adId: number }): Promise<number> {
  const { db, env } = ctx;
  const now = nowIso();
  const waiting = await db
    .select()
    .from(publishJobs)
    .where(
      and(
        eq(publishJobs.adId, input.adId),
        eq(publishJobs.status, "pending"),
        inArray(publishJobs.action, ["publish", "update"]),
        lte(publishJobs.retryAt, now),
        noImageOpen(input.adId, now),
      ),
    );
  await sendJobs(
    env,
    waiting.map((job) => ({ job, requestId: job.requestId ?? ctx.requestId })),
  );
  return waiting.length;
}

/**
 * Crash recovery: jobs whose message was lost (written, never sent, or sent and dropped) and jobs left
 * `processing` by a consumer that died are sent again. The consumer claims a job before it works on
 * it and every marketplace call is idempotent, so a message too many costs nothing.
 */
export async function resendStalledJobs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env, now } = ctx;
  const { limit } = input;
  const resendBefore = new Date(now.getTime() - RESEND_AFTER_MS).toISOString();
  const stuckBefore = new Date(now.getTime() - STUCK_AFTER_MS).toISOString();
  const { stalled, stuck } = await namedBatch(db, {
    stalled: db
      .select()
      .from(publishJobs)
      .where(
        and(
          jobIsOpen(publishJobs.status),
          eq(publishJobs.status, "pending"),
          lte(publishJobs.retryAt, resendBefore),
          settledUser(publishJobs.userId),
        ),
      )
      .limit(limit),
    stuck: db
      .select()
      .from(publishJobs)
      .where(
        and(
          jobIsOpen(publishJobs.status),
          eq(publishJobs.status, "processing"),
          lte(publishJobs.updatedAt, stuckBefore),
          settledUser(publishJobs.userId),
        ),
      )
      .limit(limit),
  });
  if (stalled.length + stuck.length === 0) return 0;
  const at = now.toISOString();
  // Stuck jobs go back to pending through the state machine (the consumer claims only pending jobs).
  await db.batch([
    db
      .update(publishJobs)
      .set({ retryAt: at })
      .where(
        and(
          inList(
            publishJobs.id,
            stalled.map((i) => i.id),
          ),
          eq(publishJobs.status, "pending"),
        ),
      ),
    ...backToPending(db, stuck, at, "the consumer stopped while working on it"),
  ]);
  const jobs = [...stalled, ...stuck];
  await sendJobs(
    env,
    jobs.map((job) => ({ job, requestId: job.requestId ?? undefined })),
  );
  return jobs.length;
}

/** The statements that put jobs no consumer works on any more back to pending, due `at`. */
const backToPending = (db: Db, jobs: PublishJobRow[], at: string, reason: string) =>
  jobs.flatMap((job) => statementsOf(transition(db, job, "retrying", { now: at, retryAt: at, reason })));

/**
 * Jobs of client group `groupId` that a move's switch cut off while they ran: their consumer's writes are
 * refused on the old shard, and their copy on the new one says `processing`, which no consumer claims. Run
 * on the new shard right after the switch, it puts them back to pending and sends them again, as the cron
 * does for a consumer that died (without waiting five minutes): the marketplace call is idempotent, so
 * one the cut-off consumer made is found again, not made twice. Answers how many.
 */
export async function resendJobsCutByMove(ctx: JobContext, input: { groupId: number }): Promise<number> {
  const { db, env, now } = ctx;
  const rows = await db
    .select({ job: publishJobs })
    .from(publishJobs)
    .innerJoin(users, eq(users.id, publishJobs.userId))
    .innerJoin(apiClients, eq(apiClients.id, users.clientId))
    .where(and(eq(publishJobs.status, "processing"), eq(apiClients.groupId, input.groupId)));
  const cut = rows.map((row) => row.job);
  if (cut.length === 0) return 0;
  await batchAll(db, backToPending(db, cut, now.toISOString(), "its group moved shards while it ran"));
  await sendJobs(
    env,
    cut.map((job) => ({ job, requestId: job.requestId ?? undefined })),
  );
  return cut.length;
}

/**
 * Jobs with no progress for a day are given up, settled as a dead letter is: what the marketplace holds
 * of their work succeeds, the rest fails with the reason and is refunded.
 */
export async function expireStaleJobs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, now } = ctx;
  const stale = await db
    .select()
    .from(publishJobs)
    .where(
      and(
        jobIsOpen(publishJobs.status),
        lte(publishJobs.updatedAt, new Date(now.getTime() - 86_400_000).toISOString()),
        settledUser(publishJobs.userId),
      ),
    )
    .limit(input.limit);
  if (stale.length > 0)
    await runPublishJobs(ctx, {
      messages: stale.map((job) => publishMessage(job, job.requestId ?? undefined)),
      mode: "expire",
    });
  return stale.length;
}
