// The guard of a sync: a stock that would end more than the share the request allows is refused whole.
import type { Db } from "../../db/client";
import { ads } from "../../db/schema";
import { detail, type ErrorDetail } from "../../lib/errors";
import { syncedAdsWhere } from "./plan";
import type { SyncOptions } from "./schemas";

/** The refusal of a stock that would end more than the share the request allows. */
export function endingRefusal(ended: number, synced: number, maxEndedPercent: number): ErrorDetail | null {
  if (ended === 0 || ended * 100 <= maxEndedPercent * synced) return null;
  const percent = Math.ceil((ended * 100) / synced);
  return detail(
    "sync_would_end_too_many",
    `maxEndedPercent: the stock would end ${ended} of the user's ${synced} synced ads (${percent}%), more than ${maxEndedPercent}%; send maxEndedPercent=${percent} to allow it`,
  );
}

/**
 * Of the user's synced ads, how many there are and how many a stock holding `inStock` would end: their
 * externalAdIds read in one query (a user's stock is at most SYNC_MAX_ITEMS ads and what it had before).
 */
export async function endingOf(
  db: Db,
  input: { userId: number; removal: SyncOptions["removal"]; inStock: Set<number> },
) {
  const synced = await db
    .select({ externalAdId: ads.externalAdId })
    .from(ads)
    .where(syncedAdsWhere(input.userId, input.removal));
  const ended = synced.flatMap((ad) =>
    input.inStock.has(ad.externalAdId as number) ? [] : [ad.externalAdId as number],
  );
  return { synced: synced.length, ended };
}
