// What a client's lanes run, loaded by ClientLanes on first use (src/index.ts: what an isolate's startup
// runs): its jobs as the queue consumer would run them, and the dispatch of the events they wrote.
import { onShard, shardOf } from "../db/shards";
import type { Env } from "../env";
import { dispatchEvents } from "../services/events";
import { type JobMessage, jobContext } from "../services/shared";
import { executeJobs } from "./execute";
import { handingJobsToLanes } from "./handOver";
import { takingTurnsOnShards } from "./turns";

/**
 * The lanes' work with their bindings: what the jobs send goes straight into the clients' lanes, and
 * their D1 calls take the isolate's turns of the event loop (src/jobs/turns.ts).
 */
export function laneWorkOf(env: Env) {
  const jobEnv = takingTurnsOnShards(handingJobsToLanes(env));
  return {
    /** Runs jobs as one batch of the queue they came from. */
    execute: (queue: string, messages: Message<JobMessage>[]) => executeJobs({ queue, messages }, jobEnv),
    /** The shard whose rows a job's message names. */
    shardOf: (message: JobMessage) => shardOf(message),
    /** Hands the client's new events on that shard to delivery. */
    dispatch: (shard: number, clientId: number) =>
      dispatchEvents(jobContext(onShard(jobEnv, shard, "the rows its message names")), { clientId }),
  };
}

export type LaneWork = ReturnType<typeof laneWorkOf>;
