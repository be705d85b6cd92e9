import { eq } from "drizzle-orm";
import { getDb, namedBatch } from "../db/client";
import { inList } from "../db/inList";
import { feeds, imageJobs, publishJobs, syncs, users, webhookEndpoints } from "../db/schema";
import { JOB_QUEUES, onEachShard, onShard } from "../db/shards";
import type { Env, ShardEnv } from "../env";
import { log } from "../lib/log";
import { clientLanesOf, type JobMessage } from "../services/shared";
import { rowIdOf } from "./execute";
import type { Lane, LaneJob } from "./lanes";

/** Where a job waits and whose share it takes: its client, lane and key (endpoint, host, or the lane). */
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
 * its endpoint's, a publish job's its user's, an image job's its user's. A job whose row is not found
 * is placed with client 0, whose lanes run it only to find it moot. A sync's step is its sync's client's, a
 * feed's fetch its feed's.
 * A ping has no place.
 */
export async function placementsOf(
  env: ShardEnv,
  queue: string,
  jobs: JobMessage[],
): Promise<(Placement | undefined)[]> {
  const db = getDb(env.shard.d1);
  const idsOf = (kind: JobMessage["kind"]) => jobs.flatMap((job) => (job.kind === kind ? [rowIdOf(job)] : []));
  // A publish or image job's client is its user's.
  const clientOfUser = { clientId: users.clientId };
  const { endpoints, publishers, imageOwners, syncers, feeders } = await namedBatch(db, {
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
    syncers: db
      .select({ id: syncs.id, clientId: syncs.clientId })
      .from(syncs)
      .where(inList(syncs.id, idsOf("sync"))),
    feeders: db
      .select({ id: feeds.id, clientId: feeds.clientId })
      .from(feeds)
      .where(inList(feeds.id, idsOf("feed"))),
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
      case "sync":
        return { clientId: syncers.find((row) => row.id === job.syncId)?.clientId ?? 0, lane: "syncs", key: "" };
      case "feed":
        return { clientId: feeders.find((row) => row.id === job.feedId)?.clientId ?? 0, lane: "feeds", key: "" };
      default:
        return undefined;
    }
  });
}

/**
 * How long a hand-over waits for a client's lanes to take its jobs. A client's object busy past it
 * holds up no one: its jobs go to the queue instead (whose consumer hands them over later), and one
 * that was taken after all runs twice, which every job allows.
 */
const HAND_OVER_MS = 5_000;

/** Gives a client's jobs to its lanes (`ClientLanes.admit`), failing after HAND_OVER_MS. */
export async function handedOver(env: Env, clientId: number, jobs: LaneJob[]): Promise<void> {
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

type JobQueueBinding = (typeof JOB_QUEUES)[number];

/** A job as it is sent, with its delay. */
type Sending = { body: JobMessage; delaySeconds?: number };

/**
 * Sends jobs as a queue would, but straight into their clients' lanes: placed by their rows on the
 * shard stamped on each (src/db/shards.ts), and admitted to each client's `ClientLanes`, where they wait
 * and run within that client's share. The shared queue carries only what could not be placed (a ping,
 * a row not yet readable, a shard that did not answer) or handed over (a client's object that did not
 * answer in time); its consumer hands those over (src/jobs/consumer.ts). So no client's backlog ever
 * waits in the shared queue in front of another client's next job.
 */
async function sendToLanes(env: Env, binding: JobQueueBinding, sending: Sending[]): Promise<void> {
  const queue = env[binding] as Queue<JobMessage>;
  const queueName = binding === "WEBHOOKS_SLOW" ? env.WEBHOOK_SLOW_QUEUE : binding;
  const placements = await onEachShard(
    sending.map((job) => job.body),
    (shard, jobs) => placementsOf(onShard(env, shard, "the rows its message names"), queueName, jobs),
  );
  const byClient = new Map<number, { jobs: LaneJob[]; sending: Sending[] }>();
  const toQueue: Sending[] = [];
  sending.forEach((job, at) => {
    const placed = placements[at];
    const placement = placed?.status === "fulfilled" ? placed.value : undefined;
    if (!placement || placement.clientId === 0) {
      toQueue.push(job);
      return;
    }
    const group = byClient.get(placement.clientId) ?? { jobs: [], sending: [] };
    group.jobs.push({ queue: queueName, ...placement, message: job.body, delaySeconds: job.delaySeconds });
    group.sending.push(job);
    byClient.set(placement.clientId, group);
  });
  await Promise.all(
    [...byClient].map(([clientId, group]) =>
      handedOver(env, clientId, group.jobs).catch((error: unknown) => {
        log("error", "hand-over to the client's lanes failed; its jobs go to the queue", {
          clientId,
          error: error instanceof Error ? error.message : String(error),
        });
        toQueue.push(...group.sending);
      }),
    ),
  );
  if (toQueue.length > 0) await queue.sendBatch(toQueue);
}

/**
 * A job queue that hands what is sent on it to its clients' lanes (`sendToLanes`). Its answers say the
 * send left nothing in the shared queue's backlog, which holds for everything its lanes took.
 */
const NOTHING_QUEUED = { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };

function laneQueue(env: Env, binding: JobQueueBinding): Queue<JobMessage> {
  const queue = env[binding] as Queue<JobMessage>;
  return {
    metrics: () => queue.metrics(),
    send: async (body, options) => {
      await sendToLanes(env, binding, [{ body, delaySeconds: options?.delaySeconds }]);
      return NOTHING_QUEUED;
    },
    sendBatch: async (messages, options) => {
      await sendToLanes(
        env,
        binding,
        [...messages].map(({ body, delaySeconds }) => ({ body, delaySeconds: delaySeconds ?? options?.delaySeconds })),
      );
      return NOTHING_QUEUED;
    },
  };
}

/** The bindings with job queues that send straight into the clients' lanes (`sendToLanes`). */
export function handingJobsToLanes(env: Env): Env {
  return {
    ...env,
    ...Object.fromEntries(JOB_QUEUES.map((binding) => [binding, laneQueue(env, binding)])),
  };
}
