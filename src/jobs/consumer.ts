import { onEachShard, onShard } from "../db/shards";
import type { Env } from "../env";
import { backoffSeconds } from "../lib/backoff";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";
import type { JobMessage } from "../services/shared";
import { executeJobs, routedToTheirShards } from "./execute";
import { handedOver, placementsOf } from "./handOver";
import type { LaneJob } from "./lanes";

/**
 * Consumer of every queue: `jobs` (publishing), `images`, `webhooks` and `webhooks-slow` (deliveries, on
 * the lane their endpoint's speed earned), and their dead-letter queues. A dead-letter batch only ends
 * jobs in D1, and runs here (`executeJobs`). Senders hand their jobs to the clients' lanes themselves
 * (src/jobs/handOver.ts); the job queues carry only what they could not, and messages sent before that.
 * Each is handed to its client's lanes (`ClientLanes`, one per client) and acknowledged: it runs there,
 * within the client's share. A hand-over that fails, or takes longer than HAND_OVER_MS, is retried by
 * the queue.
 */
export async function handleJobs(batch: MessageBatch<JobMessage>, env: Env): Promise<void> {
  if (batch.queue === env.DEAD_LETTER_QUEUE || batch.queue === env.WEBHOOK_DEAD_LETTER_QUEUE)
    return executeJobs(batch, env);
  const metrics = metricsOf(env);
  for (const message of batch.messages)
    if (message.attempts === 1)
      metrics.record({ event: "queue_lag", kind: message.body.kind, lagMs: Date.now() - message.timestamp.getTime() });
  const jobs = await routedToTheirShards(
    env,
    batch.messages.map((message) => message.body),
  );
  // Placed by the rows on each message's shard; a shard that does not answer retries its own messages.
  const placements = await onEachShard(jobs, (shard, onIt) =>
    placementsOf(onShard(env, shard, "the rows its message names"), batch.queue, onIt),
  );
  const byClient = new Map<number, { jobs: LaneJob[]; messages: Message<JobMessage>[] }>();
  batch.messages.forEach((message, at) => {
    const placed = placements[at];
    if (placed?.status === "rejected") {
      log("error", "placing a job failed (its shard did not answer), will retry", {
        job: message.body,
        error: placed.reason instanceof Error ? placed.reason.message : String(placed.reason),
      });
      message.retry({ delaySeconds: backoffSeconds(message.attempts) });
      return;
    }
    const placement = placed?.value;
    if (!placement) {
      message.ack();
      return;
    }
    const group = byClient.get(placement.clientId) ?? { jobs: [], messages: [] };
    group.jobs.push({ queue: batch.queue, lane: placement.lane, key: placement.key, message: jobs[at] as JobMessage });
    group.messages.push(message);
    byClient.set(placement.clientId, group);
  });
  await Promise.all(
    [...byClient].map(async ([clientId, { jobs, messages }]) => {
      try {
        await handedOver(env, clientId, jobs);
        for (const message of messages) message.ack();
      } catch (error) {
        log("error", "hand-over to the client's lanes failed, will retry", {
          clientId,
          error: error instanceof Error ? error.message : String(error),
        });
        for (const message of messages) message.retry({ delaySeconds: backoffSeconds(message.attempts) });
      }
    }),
  );
}
