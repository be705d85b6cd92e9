import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { imageJobs, queueItems } from "../db/schema";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import { applyEvent, type QueueItem } from "../services/publishing";
import { backoffSeconds } from "./backoff";
import { runImageJob } from "./imageJob";
import { runPublishItem } from "./publishJob";
import type { Job } from "./types";

async function runJob(env: Env, job: Job): Promise<void> {
  switch (job.kind) {
    case "image":
      return runImageJob(env, job.jobId);
    case "publish":
      return runPublishItem(env, job.itemId, job.requestId);
  }
}

/** A job that exhausted its retries arrives on the dead-letter queue: it is marked failed, with the reason. */
async function giveUp(env: Env, job: Job): Promise<void> {
  switch (job.kind) {
    case "image":
      await getDb(env.DB)
        .update(imageJobs)
        .set({ processing: false, done: true, result: false, reason: "failed after repeated attempts" })
        .where(eq(imageJobs.id, job.jobId));
      return;
    case "publish": {
      const db = getDb(env.DB);
      const item: QueueItem | undefined = await db.select().from(queueItems).where(eq(queueItems.id, job.itemId)).get();
      if (item)
        await applyEvent(db, item, "failed", {
          now: nowIso(),
          reason: item.reason
            ? `the portal kept failing (${item.reason}); gave up after repeated attempts`
            : "the portal kept failing; gave up after repeated attempts",
        });
    }
  }
}

/** Consumer of `jobs` and its dead-letter queue. Messages are pointers to D1 rows; handlers are idempotent. */
export async function handleJobs(batch: MessageBatch<Job>, env: Env): Promise<void> {
  const deadLetter = batch.queue.includes("dlq");
  await Promise.all(
    batch.messages.map(async (message) => {
      try {
        await (deadLetter ? giveUp(env, message.body) : runJob(env, message.body));
        message.ack();
      } catch (error) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "job failed, will retry",
            queue: batch.queue,
            job: message.body,
            attempts: message.attempts,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
        message.retry({ delaySeconds: backoffSeconds(message.attempts) });
      }
    }),
  );
}
