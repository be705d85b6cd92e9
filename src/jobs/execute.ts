import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { imageJobs } from "../db/schema";
import { onEachShard, onShard, shardOf, shardsOfIds } from "../db/shards";
import type { Env, ShardEnv } from "../env";
import { backoffSeconds } from "../lib/backoff";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";
import { abandonDelivery, type DeliveryLane, deliverWebhooks } from "../services/events";
import { failFeedFetch, runFeedFetch } from "../services/feeds";
import { failImageJob, runImageJob } from "../services/images";
import { flushUpdateRequests, runPublishJobs, sendJobsAwaitingImages } from "../services/publishing";
import { type ImageMessage, type JobMessage, jobContext } from "../services/shared";
import { failSync, runSyncStep } from "../services/syncs";

/**
 * An image job; the updates its stored image asked for are queued at once, and the placements and updates
 * of its ad that waited for its images go when it was the last.
 */
async function runImage(env: ShardEnv, job: ImageMessage): Promise<void> {
  const ctx = jobContext(env, job.requestId);
  const { adId, updatesRequested } = await runImageJob(ctx, { jobId: job.jobId });
  if (updatesRequested) await flushUpdateRequests(ctx, { limit: 100 });
  if (adId !== undefined) await sendJobsAwaitingImages(ctx, { adId });
}

/** A job that exhausted its retries arrives on the dead-letter queue: it ends, failed with the reason or settled. */
async function giveUp(env: ShardEnv, job: JobMessage): Promise<void> {
  const db = getDb(env.shard.d1);
  switch (job.kind) {
    case "image": {
      const imageJob = await db.select().from(imageJobs).where(eq(imageJobs.id, job.jobId)).get();
      if (!imageJob) return;
      await db.batch(failImageJob(db, imageJob, "failed after repeated attempts"));
      await sendJobsAwaitingImages(jobContext(env, job.requestId), { adId: imageJob.adId });
      return;
    }
    case "publish": {
      // The marketplace may hold what a lost answer did: it is asked before the job fails and is refunded.
      const [settled] = await runPublishJobs(jobContext(env, job.requestId), { messages: [job], mode: "give-up" });
      if (settled?.status === "rejected") throw settled.reason;
      return;
    }
    case "webhook":
      // A delivery schedules its own next attempt; one that reaches here failed unexpectedly, and is
      // logged; it no longer holds a place in its endpoint's queue.
      return abandonDelivery(db, job);
    case "sync":
      return failSync(jobContext(env, job.requestId), {
        syncId: job.syncId,
        reason: "a step failed after repeated attempts",
      });
    case "feed":
      return failFeedFetch(jobContext(env, job.requestId), { feedId: job.feedId });
    case "ping":
      return;
  }
}

/**
 * Runs a batch's jobs: the publish jobs together, the webhook deliveries together (in shares per
 * endpoint, see `deliverWebhooks`), the image jobs side by side. One settled result per job, in order.
 */
async function runAll(env: ShardEnv, jobs: JobMessage[], lane: DeliveryLane): Promise<PromiseSettledResult<void>[]> {
  const ofKind = <K extends JobMessage["kind"]>(kind: K) =>
    jobs.filter((job): job is Extract<JobMessage, { kind: K }> => job.kind === kind);
  const [publishJobs, deliveries, images, syncSteps, feedFetches] = [
    ofKind("publish"),
    ofKind("webhook"),
    ofKind("image"),
    ofKind("sync"),
    ofKind("feed"),
  ];
  // A kind's run that throws as a whole fails each of its jobs, not the batch.
  const [published, delivered, imaged, synced, fed] = await Promise.allSettled([
    publishJobs.length ? runPublishJobs(jobContext(env), { messages: publishJobs }) : [],
    deliveries.length ? deliverWebhooks(jobContext(env), { messages: deliveries, lane }) : [],
    Promise.allSettled(images.map((job) => runImage(env, job))),
    Promise.allSettled(syncSteps.map((job) => runSyncStep(jobContext(env, job.requestId), { syncId: job.syncId }))),
    Promise.allSettled(feedFetches.map((job) => runFeedFetch(jobContext(env, job.requestId), { feedId: job.feedId }))),
  ]);
  const pick = (run: PromiseSettledResult<PromiseSettledResult<unknown>[]>, at: number) =>
    run.status === "rejected" ? run : run.value[at];
  const outcomeOf = (job: JobMessage) =>
    job.kind === "publish"
      ? pick(published, publishJobs.indexOf(job))
      : job.kind === "webhook"
        ? pick(delivered, deliveries.indexOf(job))
        : job.kind === "image"
          ? pick(imaged, images.indexOf(job))
          : job.kind === "sync"
            ? pick(synced, syncSteps.indexOf(job))
            : job.kind === "feed"
              ? pick(fed, feedFetches.indexOf(job))
              : undefined;
  return jobs.map((job): PromiseSettledResult<void> => {
    const outcome = outcomeOf(job);
    return outcome?.status === "rejected" ? outcome : { status: "fulfilled", value: undefined };
  });
}

/** The D1 row a job names: its endpoint, publish job or image job. */
export const rowIdOf = (job: JobMessage): number => {
  switch (job.kind) {
    case "webhook":
      return job.endpointId;
    case "publish":
      return job.itemId;
    case "image":
      return job.jobId;
    case "sync":
      return job.syncId;
    case "feed":
      return job.feedId;
    case "ping":
      return 0;
  }
};

/** The table of the row a job names, whose id blocks say its group's shard. */
const ROW_TABLES: Partial<Record<JobMessage["kind"], string>> = {
  webhook: "webhook_endpoints",
  publish: "queue_items",
  image: "image_jobs",
  sync: "syncs",
  feed: "feeds",
};

/**
 * The jobs as their groups' shards have them now: a job sent (or retried by its client's lanes) before
 * its group moved shards (src/db/moves/) goes to the group's new shard, marked `movedFrom` the shard it
 * named. One directory query for the blocks this isolate has not seen lately (`shardsOfIds`).
 */
export async function routedToTheirShards(env: Env, jobs: JobMessage[]): Promise<JobMessage[]> {
  const named = jobs.map((job) => ({ field: "", kind: ROW_TABLES[job.kind] ?? "", id: rowIdOf(job) }));
  const known = named.filter((name) => name.kind !== "");
  // A directory that does not answer stops no client's jobs: each runs where its message says. A job of
  // a group that moved meanwhile finds the old shard refusing or empty, and the new shard's cron sends
  // it again.
  const shards = await shardsOfIds(env, known).catch((error: unknown) => {
    log("error", "the directory did not answer; jobs run on the shards their messages name", {
      error: error instanceof Error ? error.message : String(error),
    });
    return known.map(() => undefined);
  });
  const placeOfRow = new Map(known.map((name, at) => [`${name.kind} ${name.id}`, shards[at]]));
  return jobs.map((job, at) => {
    const name = named[at] as (typeof named)[number];
    const place = placeOfRow.get(`${name.kind} ${name.id}`);
    const sent = shardOf(job);
    // A job the shard its group moves to sent is one of its own after the switch (before it, the move's
    // guard keeps every writer there off the group's rows): it runs there, whatever this isolate read.
    if (place === undefined || place.shard === sent || place.movingTo === sent) return job;
    return { ...job, shard: place.shard, movedFrom: job.movedFrom ?? sent };
  });
}

/**
 * Runs a batch of a queue's jobs and acknowledges or retries each, as a queue consumer: the batches of
 * the dead-letter queues (DEAD_LETTER_QUEUE, WEBHOOK_DEAD_LETTER_QUEUE: configuration, not a guess from
 * the name) end their jobs (`giveUp`), the others run them; a delivery's lane is the queue it travelled
 * on (WEBHOOK_SLOW_QUEUE or not). Messages are pointers to D1 rows; handlers are idempotent. A failed
 * write of the dead-letter executor is retried too.
 */
export async function executeJobs(
  batch: Pick<MessageBatch<JobMessage>, "queue" | "messages">,
  env: Env,
): Promise<void> {
  const deadLetter = batch.queue === env.DEAD_LETTER_QUEUE || batch.queue === env.WEBHOOK_DEAD_LETTER_QUEUE;
  const metrics = metricsOf(env);
  const lane: DeliveryLane = batch.queue === env.WEBHOOK_SLOW_QUEUE ? "slow" : "fast";
  // Each job runs on its group's shard; a shard that fails as a whole fails its own jobs.
  const outcomes = (
    await onEachShard(
      await routedToTheirShards(
        env,
        batch.messages.map((message) => message.body),
      ),
      (shard, jobs) => {
        const shardEnv = onShard(env, shard, "the rows its message names");
        return deadLetter ? Promise.allSettled(jobs.map((job) => giveUp(shardEnv, job))) : runAll(shardEnv, jobs, lane);
      },
    )
  ).map((outcome): PromiseSettledResult<void> => (outcome.status === "fulfilled" ? outcome.value : outcome));
  batch.messages.forEach((message, at) => {
    const job = message.body;
    const outcome = outcomes[at];
    if (outcome?.status === "fulfilled") {
      if (deadLetter) {
        metrics.record({ event: "dead_letter", kind: job.kind });
        log("error", "job dead-lettered", { job, requestId: job.requestId });
      }
      message.ack();
      return;
    }
    const error = outcome?.reason;
    log("error", deadLetter ? "dead-letter write failed, will retry" : "job failed, will retry", {
      queue: batch.queue,
      job,
      attempts: message.attempts,
      requestId: job.requestId,
      error: error instanceof Error ? error.message : String(error),
    });
    metrics.record({ event: "retry", kind: job.kind, attempts: message.attempts });
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  });
}
