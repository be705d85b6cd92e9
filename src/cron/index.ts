import { getDb } from "../db/client";
import type { Env } from "../env";
import { pullMarketData } from "../services/marketData";
import { flushUpdateRequests } from "../services/publishing";

/**
 * The minute's scheduled work, each part bounded (what is left continues next minute), with one
 * summary line in the log.
 */
export async function runScheduled(env: Env, scheduledTime: number): Promise<Record<string, unknown>> {
  const db = getDb(env.DB);
  const startedAt = Date.now();
  const updatesQueued = await flushUpdateRequests(db, env, 200);
  const market = await pullMarketData(db, env, new Date(scheduledTime), 50);
  const summary = {
    level: "info",
    msg: "scheduled work",
    at: new Date(scheduledTime).toISOString(),
    updatesQueued,
    marketDataConnections: market.connections,
    newBids: market.bids,
    durationMs: Date.now() - startedAt,
  };
  console.log(JSON.stringify(summary));
  return summary;
}
