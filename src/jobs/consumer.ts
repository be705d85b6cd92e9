import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { imageJobs } from "../db/schema";
import type { Env } from "../env";
import { failItem } from "../services/publishing";
import { runImageJob } from "./imageJob";
import { runPublishItem } from "./publishJob";
import type { Job } from "./types";

/** Seconds before the next try of a job that failed transiently: 2, 4, 8, … up to 5 minutes. */
export const backoffSeconds = (attempts: number) => Math.min(300, 2 ** Math.max(1, attempts));

async function runJob(env: Env, job: Job): Promise<void> {
  switch (job.kind) {
    case "image":
      return runImageJob(env, job.jobId);
    case "publish":
      return runPublishItem(env, job.itemId);
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
    case "publish":
      await failItem(getDb(env.DB), job.itemId, "the portal kept failing; gave up after repeated attempts");
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
