import { shardNumbers } from "../db/shards";
import type { Env } from "../env";
import { log } from "../lib/log";
import { continueGroupMoves } from "../services/accounts";
import { type ShardMinute, skippedMinute } from "./shardCron";

export { runScheduled } from "./minute";
export { ShardCron } from "./shardCron";

/** A shard's cron object (src/cron/shardCron.ts): one per shard. */
const shardCronOf = (env: Env, shard: number) => env.SHARD_CRON.get(env.SHARD_CRON.idFromName(String(shard)));

/**
 * The cron: the minute's work of every shard, each in its shard's own object (`ShardCron`) side by side,
 * and beside them the group moves under way (the directory's work, not a shard's). A shard whose object
 * fails or is still busy with its last minute reports it in its summary; the others' minutes run.
 * Answers each shard's summary.
 */
export async function runScheduledOnEveryShard(env: Env, scheduledTime: number): Promise<ShardMinute[]> {
  const [summaries] = await Promise.all([
    Promise.all(
      shardNumbers(env).map((shard) =>
        shardCronOf(env, shard)
          .run(shard, scheduledTime)
          .catch((error: unknown): ShardMinute => {
            const message = error instanceof Error ? error.message : String(error);
            log("error", "a shard's minute failed", { shard, error: message });
            return { ...skippedMinute(shard, scheduledTime, `its cron object failed: ${message}`), failed: ["shard"] };
          }),
      ),
    ),
    runGroupMoves(env, scheduledTime),
  ]);
  return summaries;
}

/** Runs the group moves under way on (src/db/moves/): one that fails resumes at the next run. */
async function runGroupMoves(env: Env, scheduledTime: number) {
  const requestId = `cron-${new Date(scheduledTime).toISOString()}`;
  try {
    const counts = await continueGroupMoves(env);
    if (counts.moving + counts.confirmed + counts.failed.length > 0)
      log(counts.failed.length > 0 ? "error" : "info", "group moves", { ...counts, requestId });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log("error", "scheduled part failed", { part: "groupMoves", requestId, error: message });
  }
}
