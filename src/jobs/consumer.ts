import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { imageJobs } from "../db/schema";
import type { Env } from "../env";
import { backoffSeconds } from "../lib/backoff";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";
import { abandonDelivery, deliverWebhooks, dispatchEvents } from "../services/events";
import { failImageJob, runImageJob } from "../services/images";
import { flushUpdateRequests, runPublishJobs } from "../services/publishing";
import type { Job } from "../services/shared";

/** A job other than publishing and webhook deliveries (those run together, per batch). */
async function runJob(env: Env, job: Exclude<Job, { kind: "publish" | "webhook" }>): Promise<void> {
  switch (job.kind) {
    case "image": {
      const { updatesRequested } = await runImageJob(env, job.jobId, job.requestId);
      if (updatesRequested) await flushUpdateRequests(getDb(env.DB), env, 100, job.requestId);
      return;
    }
    case "ping":
      return;
  }
}

/** A job that exhausted its retries arrives on the dead-letter queue: it ends, failed with the reason or settled. */
async function giveUp(env: Env, job: Job): Promise<void> {
  const db = getDb(env.DB);
  switch (job.kind) {
    case "image": {
      const imageJob = await db.select().from(imageJobs).where(eq(imageJobs.id, job.jobId)).get();
      if (imageJob) await db.batch(failImageJob(db, imageJob, "failed after repeated attempts"));
      return;
    }
    case "publish": {
      // The marketplace may hold what a lost answer did: it is asked before the job fails and is refunded.
      const [settled] = await runPublishJobs(env, [job], "give-up");
      if (settled?.status === "rejected") throw settled.reason;
      return;
    }
    case "webhook":
      // A delivery schedules its own next attempt; one that reaches here failed unexpectedly, and is
      // logged; it no longer holds a place in its endpoint's queue.
      return abandonDelivery(db, job);
    case "ping":
      return;
  }
}

/**
 * Runs a batch's jobs: the publish jobs together, the webhook deliveries together (per endpoint in
 * turn, see `deliverWebhooks`), the others each on its own. One settled result per job, in order.
 */
function runAll(env: Env, jobs: Job[]): Promise<PromiseSettledResult<void>[]> {
  const publishJobs = jobs.flatMap((job) => (job.kind === "publish" ? [job] : []));
  const published = publishJobs.length ? runPublishJobs(env, publishJobs) : Promise.resolve([]);
  const deliveries = jobs.flatMap((job) => (job.kind === "webhook" ? [job] : []));
  const delivered = deliveries.length ? deliverWebhooks(getDb(env.DB), env, deliveries) : Promise.resolve([]);
  return Promise.allSettled(
    jobs.map(async (job) => {
      if (job.kind === "webhook") {
        const outcome = (await delivered)[deliveries.indexOf(job)];
        if (outcome?.status === "rejected") throw outcome.reason;
        return;
      }
      if (job.kind !== "publish") return runJob(env, job);
      const outcome = (await published)[publishJobs.indexOf(job)];
      if (outcome?.status === "rejected") throw outcome.reason;
    }),
  );
}

/**
 * Consumer of `jobs`, of `webhooks` (deliveries only, so an endpoint that hangs holds none of the slots
 * of publishing and images) and of their dead-letter queues; which one a batch comes from is
 * configuration (DEAD_LETTER_QUEUE, WEBHOOK_DEAD_LETTER_QUEUE), not a guess from its name. Messages are
 * pointers to D1 rows; handlers are idempotent. The batch's publish jobs run together (two D1 round trips
 * for all of them), its deliveries together, the others one by one, side by side. A failed write of the
 * dead-letter consumer is retried too; what still fails goes to that queue's own last-resort queue
 * (wrangler.toml), so nothing is dropped silently.
 */
export async function handleJobs(batch: MessageBatch<Job>, env: Env, ctx?: ExecutionContext): Promise<void> {
  const deadLetter = batch.queue === env.DEAD_LETTER_QUEUE || batch.queue === env.WEBHOOK_DEAD_LETTER_QUEUE;
  const metrics = metricsOf(env);
  const jobs = batch.messages.map((message) => message.body);
  if (!deadLetter)
    for (const message of batch.messages)
      if (message.attempts === 1)
        metrics.record({
          event: "queue_lag",
          kind: message.body.kind,
          lagMs: Date.now() - message.timestamp.getTime(),
        });
  const outcomes = deadLetter ? await Promise.allSettled(jobs.map((job) => giveUp(env, job))) : await runAll(env, jobs);
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
  // The jobs just run wrote events, or deliveries ended and made room in their endpoints' queues: hand
  // the next events to delivery now rather than at the next cron.
  if (deadLetter) return;
  const deliveredTo = jobs.flatMap((job) => (job.kind === "webhook" ? [job.endpointId] : []));
  const scope = deliveredTo.length === jobs.length ? { endpointIds: [...new Set(deliveredTo)] } : {};
  ctx?.waitUntil(
    dispatchEvents(getDb(env.DB), env, scope).catch((error) =>
      log("error", "webhook dispatch failed", { error: error instanceof Error ? error.message : String(error) }),
    ),
  );
}
