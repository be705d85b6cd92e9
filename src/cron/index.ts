import { getDb } from "../db/client";
import type { Env } from "../env";
import { purgeExpiredKeys } from "../services/idempotency";
import { pullMarketData } from "../services/marketData";
import { logSender, sendNotifications } from "../services/notifications";
import {
  expireStaleItems,
  flushUpdateRequests,
  replaceExpiredListings,
  resendStalledItems,
} from "../services/publishing";
import { runDueTasks } from "./tasks";

/**
 * The minute's scheduled work: due tasks, autoreplace, requested updates, stale queue items, bids and
 * statistics, notices. Each part is bounded (what is left continues next minute); one summary line is
 * logged. (Expired login links and activation tokens are dropped by the UserTokens object's own alarm.)
 */
export async function runScheduled(env: Env, scheduledTime: number) {
  const db = getDb(env.DB);
  const now = new Date(scheduledTime);
  const startedAt = Date.now();
  const taskRuns = await runDueTasks(db, env, now);
  const autoreplace = await replaceExpiredListings(db, env, now);
  const updatesQueued = await flushUpdateRequests(db, env, 200);
  // Queue items carry the database's own clock, so their age is measured against the wall clock.
  const resentItems = await resendStalledItems(db, env, new Date());
  const staleItems = await expireStaleItems(db, new Date());
  const market = await pullMarketData(db, env, now, 50);
  const notices = await sendNotifications(db, logSender);
  const idempotencyKeysPurged = await purgeExpiredKeys(db, new Date());
  const summary = {
    level: "info",
    msg: "scheduled work",
    at: now.toISOString(),
    taskRuns: taskRuns.length,
    featuresQueued: taskRuns.reduce((n, r) => n + r.queued, 0),
    autoreplaced: autoreplace.replaced,
    updatesQueued,
    resentItems,
    staleItems,
    marketDataConnections: market.connections,
    newBids: market.bids,
    notices,
    idempotencyKeysPurged,
    durationMs: Date.now() - startedAt,
  };
  console.log(JSON.stringify(summary));
  return summary;
}
