import { eq } from "drizzle-orm";
import { getDb, namedBatch } from "../db/client";
import { inList } from "../db/inList";
import { imageJobs, publishJobs, users, webhookEndpoints } from "../db/schema";
import { onEachShard, onShard } from "../db/shards";
import type { Env, ShardEnv } from "../env";
import { backoffSeconds } from "../lib/backoff";
import { log } from "../lib/log";
import { metricsOf } from "../lib/metrics";
import { clientLanesOf, type JobMessage } from "../services/shared";
import type { Lane, LaneJob } from "./clientLanes";
import { executeJobs, routedToTheirShards, rowIdOf } from "./execute";

/** Where a job waits and whose share it takes: its client, lane and share key (endpoint, host, or the lane). */
type Placement = { clientId: number; lane: Lane; key: string };

/** The host of an image's source, the key of its share of the image lane. */
const hostOf = (url: string | undefined) => {
  try {
    return new URL(url ?? "").host;
  } catch {
    return "";
  }
};

/**
 * The client, lane and key of each job of a shard, read in one D1 round trip: a delivery's client is
 * its endpoint's, a publish job's its user's, an image job's its user's. A job whose row is gone is
 * placed with client 0, whose lanes run it only to find it moot. A ping has no place.
 */
async function placementsOf(env: ShardEnv, queue: string, jobs: JobMessage[]): Promise<(Placement | undefined)[]> {
  const db = getDb(env.shard.d1);
  const idsOf = (kind: JobMessage["kind"]) => jobs.flatMap((job) => (job.kind === kind ? [rowIdOf(job)] : []));
  // A publish or image job's client is its user's.
  const clientOfUser = { clientId: users.clientId };
  const { endpoints, publishers, imageOwners } = await namedBatch(db, {
    endpoints: db
      .select({ id: webhookEndpoints.id, clientId: webhookEndpoints.clientId })
      .from(webhookEndpoints)
      .where(inList(webhookEndpoints.id, idsOf("webhook"))),
    publishers: db
      .select({ id: publishJobs.id, ...clientOfUser })
      .from(publishJobs)
      .innerJoin(users, eq(users.id, publishJobs.userId))
      .where(inList(publishJobs.id, idsOf("publish"))),
    imageOwners: db
      .select({ id: imageJobs.id, ...clientOfUser, sourceUrl: imageJobs.sourceUrl })
      .from(imageJobs)
      .innerJoin(users, eq(users.id, imageJobs.userId))
      .where(inList(imageJobs.id, idsOf("image"))),
  });
  const slow = queue === env.WEBHOOK_SLOW_QUEUE;
  return jobs.map((job): Placement | undefined => {
    switch (job.kind) {
      case "webhook": {
        const endpoint = endpoints.find((row) => row.id === job.endpointId);
        return {
          clientId: endpoint?.clientId ?? 0,
          lane: slow ? "webhooks-slow" : "webhooks",
          key: String(job.endpointId),
        };
      }
      case "publish":
        return {
          clientId: publishers.find((row) => row.id === job.itemId)?.clientId ?? 0,
          lane: "marketplace",
          key: "",
        };
      case "image": {
        const owner = imageOwners.find((row) => row.id === job.jobId);
        return { clientId: owner?.clientId ?? 0, lane: "images", key: hostOf(owner?.sourceUrl) };
      }
      default:
        return undefined;
    }
  });
}

/**
 * How long the consumer waits for one client's lanes to take its jobs. A client's object busy past it
 * does not hold the batch (and the batches behind it, of every client): its jobs go back to the queue,
 * and one that was taken after all runs twice, which every job allows.
 */
const HAND_OVER_MS = 5_000;

async function handedOver(env: Env, clientId: number, jobs: LaneJob[]): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tooLong = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`client ${clientId}'s lanes did not answer within ${HAND_OVER_MS} ms`)),
      HAND_OVER_MS,
    );
  });
  try {
    await Promise.race([clientLanesOf(env, clientId).admit(clientId, jobs), tooLong]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Consumer of every queue: `jobs` (publishing), `images`, `webhooks` and `webhooks-slow` (deliveries, on
 * the lane their endpoint's speed earned), and their dead-letter queues. A dead-letter batch only ends
 * jobs in D1, and runs here (`executeJobs`). Every other job is handed to its client's lanes
 * (`ClientLanes`, one per client) and acknowledged: it runs there, within the client's share, so no job
 * of one client ever waits in a batch behind another client's slow work. A hand-over that fails, or
 * takes longer than HAND_OVER_MS, is retried by the queue.
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
