// One shard's minute of scheduled work: its parts, each bounded, each on its own.
import { getDb } from "../db/client";
import { topUpIdBlocks } from "../db/ids";
import { onShard } from "../db/shards";
import type { Env, ShardEnv } from "../env";
import { handingJobsToLanes } from "../jobs/handOver";
import { log } from "../lib/log";
import { archiveImageJobs, archiveJobs, archiveLedger, archiveOldLogs } from "../services/archive";
import { dispatchEvents } from "../services/events";
import { queueDueFeeds } from "../services/feeds";
import { pullMarketData, purgeOldStatistics } from "../services/market";
import { purgeExpiredKeys } from "../services/operations";
import {
  closeDeletedUsersConnections,
  expireStaleJobs,
  flushUpdateRequests,
  reencryptTokens,
  replaceExpiredListings,
  resendStalledJobs,
} from "../services/publishing";
import { logSender, runDueTasks, sendNotifications } from "../services/scheduling";
import type { JobContext } from "../services/shared";
import { purgeOldSyncs } from "../services/syncs";

/** One part of the minute's work: bounded (what is left continues next minute), answering its counts. */
interface ScheduledPart {
  name: string;
  run(): Promise<Record<string, number>>;
}

const scheduledParts = (ctx: JobContext): ScheduledPart[] => {
  // Jobs and keys carry the database's own clock, so their age is measured against the wall clock.
  const onWallClock = () => ({ ...ctx, now: new Date() });
  return [
    // First: the blocks the shard's inserts issue ids from, leased ahead of need while the directory answers.
    {
      name: "idBlocks",
      run: async () => ({
        leased: await topUpIdBlocks({
          number: ctx.env.shard.number,
          d1: ctx.env.shard.d1,
          directory: ctx.env.DIRECTORY,
        }),
      }),
    },
    {
      name: "tasks",
      run: async () => {
        const runs = await runDueTasks(ctx, { limit: 50 });
        return { runs: runs.length, featuresQueued: runs.reduce((n, r) => n + r.queued, 0) };
      },
    },
    // Due feeds into their clients' lanes, by turns of client (a client's many feeds delay only its own).
    { name: "feeds", run: async () => ({ queued: await queueDueFeeds(ctx, { limit: 100 }) }) },
    { name: "autoreplace", run: () => replaceExpiredListings(ctx, { limit: 50 }) },
    { name: "requestedUpdates", run: async () => ({ queued: await flushUpdateRequests(ctx, { limit: 200 }) }) },
    { name: "resend", run: async () => ({ resent: await resendStalledJobs(onWallClock(), { limit: 500 }) }) },
    { name: "expire", run: async () => ({ expired: await expireStaleJobs(onWallClock(), { limit: 100 }) }) },
    { name: "marketData", run: () => pullMarketData(ctx, { limit: 50 }) },
    { name: "notices", run: async () => ({ sent: await sendNotifications(ctx, { sender: logSender, limit: 100 }) }) },
    { name: "idempotencyKeys", run: async () => ({ purged: await purgeExpiredKeys(onWallClock(), { limit: 1000 }) }) },
    { name: "webhooks", run: async () => ({ dispatched: await dispatchEvents(ctx, { requestId: ctx.requestId }) }) },
    { name: "tokenKeys", run: async () => ({ resealed: await reencryptTokens(ctx, { limit: 200 }) }) },
    {
      name: "deletedUsersConnections",
      run: async () => ({ closed: await closeDeletedUsersConnections(ctx, { limit: 50 }) }),
    },
    // Last, after the work clients wait for: rows past their window in D1 go to the archive (R2), oldest
    // first (a slow bucket delays only this housekeeping, and the shard's next minute). Limits sized so the
    // archive keeps pace with what becomes due (npm run capacity: events and their deliveries most).
    { name: "events", run: async () => ({ archived: await archiveOldLogs(onWallClock(), { limit: 5000 }) }) },
    { name: "archivedJobs", run: async () => ({ archived: await archiveJobs(onWallClock(), { limit: 2000 }) }) },
    { name: "archivedLedger", run: async () => ({ archived: await archiveLedger(onWallClock(), { limit: 500 }) }) },
    {
      name: "archivedImageJobs",
      run: async () => ({ archived: await archiveImageJobs(onWallClock(), { limit: 2000 }) }),
    },
    // Syncs past their 30 days go with their stock and report (R2).
    { name: "syncs", run: async () => ({ purged: await purgeOldSyncs(onWallClock(), { limit: 20 }) }) },
    // Daily statistics past their 90 days.
    { name: "statistics", run: async () => ({ purged: await purgeOldStatistics(onWallClock(), { limit: 1000 }) }) },
  ];
};

/**
 * The minute's scheduled work: id blocks leased ahead, due tasks, due feeds, autoreplace, requested updates, crash recovery and expiry of
 * jobs, bids and statistics, notices, expired idempotency keys, webhook dispatch, tokens under a previous
 * key, and last rows past their window to the archive.
 * Each part runs on its own: one that throws is logged and reported, and the others still run. One
 * summary line per run, with the run's id (`cron-<time>`), which the messages it sends carry too.
 * (Expired login links and activation tokens are dropped by the UserTokens object's own alarm.)
 */
export async function runScheduled(env: ShardEnv, scheduledTime: number) {
  const db = getDb(env.shard.d1);
  const shard = env.shard.number;
  const now = new Date(scheduledTime);
  const runId = `cron-${now.toISOString()}`;
  const startedAt = Date.now();
  const parts: Record<string, Record<string, number | string | boolean>> = {};
  const failed: string[] = [];
  for (const part of scheduledParts({ db, env, now, requestId: runId })) {
    const partStartedAt = Date.now();
    try {
      parts[part.name] = { ok: true, ...(await part.run()), durationMs: Date.now() - partStartedAt };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      failed.push(part.name);
      parts[part.name] = { ok: false, error: message, durationMs: Date.now() - partStartedAt };
      log("error", "scheduled part failed", { part: part.name, requestId: runId, error: message });
    }
  }
  const summary = { runId, shard, at: now.toISOString(), parts, failed, durationMs: Date.now() - startedAt };
  log(failed.length > 0 ? "error" : "info", "scheduled work", { ...summary, requestId: runId });
  return summary;
}

/** A shard's minute as its ShardCron runs it: the jobs it sends go straight into the clients' lanes. */
export function runShardMinute(env: Env, shard: number, scheduledTime: number) {
  return runScheduled(onShard(handingJobsToLanes(env), shard, "the shard's own cron"), scheduledTime);
}
