import { DurableObject } from "cloudflare:workers";
import { onShard } from "../db/shards";
import type { Env } from "../env";
import { handingJobsToLanes } from "../jobs/handOver";
import { runScheduled } from "./minute";

/** What one shard's minute did: each part's counts, or why the minute did not run there. */
export type ShardMinute = Awaited<ReturnType<typeof runScheduled>> & { skipped?: string };

/**
 * One shard's minute of scheduled work, in an invocation of its own: one object per shard, called by
 * the cron for each shard side by side. Its D1 queries count against its own invocation's limits, not
 * one invocation's for every shard, and a shard that is slow or down holds up only its own minutes: a
 * minute that finds the shard's last one still running is skipped there (every part is bounded and
 * goes on next minute where it stopped), while the other shards' minutes run.
 */
export class ShardCron extends DurableObject<Env> {
  private running: number | undefined;

  async run(shard: number, scheduledTime: number): Promise<ShardMinute> {
    if (this.running !== undefined) return skippedMinute(shard, scheduledTime, this.running);
    this.running = scheduledTime;
    try {
      return await runScheduled(onShard(handingJobsToLanes(this.env), shard, "the shard's own cron"), scheduledTime);
    } finally {
      this.running = undefined;
    }
  }
}

/** A minute a shard did not run: `why`, and the summary's shape with nothing done. */
export function skippedMinute(shard: number, scheduledTime: number, busySince: number | string): ShardMinute {
  const at = new Date(scheduledTime).toISOString();
  const skipped =
    typeof busySince === "number"
      ? `the minute of ${new Date(busySince).toISOString()} is still running on shard ${shard}`
      : busySince;
  return { runId: `cron-${at}`, shard, at, parts: {}, failed: [], durationMs: 0, skipped };
}
