import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { onFirstUse } from "../lib/onFirstUse";
import type { runScheduled } from "./minute";

/** The minute's work, loaded by an isolate's first minute (src/index.ts: what its startup runs). */
export const loadMinute = onFirstUse(() => import("./minute"));

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
      const { runShardMinute } = await loadMinute();
      return await runShardMinute(this.env, shard, scheduledTime);
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
