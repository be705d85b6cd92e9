// A sync step that ends the ads the stock no longer holds: off every target, then deleted or archived.
import { and, asc, eq, gt, sql } from "drizzle-orm";
import { ads, syncs } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { deleteAdsBatch, patchAdsBatch } from "../ads/batches";
import { loadCatalogue } from "../catalogue/catalogue";
import { eventOf } from "../events/events";
import type { ServiceContext } from "../shared/context";
import { syncedAdsOf, syncedAdsWhere, targetPlan } from "./plan";
import { queueTargets } from "./queueTargets";
import { CHUNK_ITEMS, getChunk, type ItemReport, putChunk, stockKeys } from "./stockStore";
import type { SyncRow } from "./syncViews";

/** Synced ads an ending step looks at per query, for those the stock no longer holds. */
const SCAN_ADS = 500;

/**
 * The next CHUNK_ITEMS of the user's synced ads that the stock no longer holds (after the row's
 * `endScan`), looked at in id order. A step run again takes the ads its dead run reported.
 */
async function adsToEnd(ctx: ServiceContext, sync: SyncRow, earlier: ItemReport[] | undefined) {
  const { db, env } = ctx;
  if (earlier) {
    const ids = earlier.flatMap((report) => (report.adId === null ? [] : [report.adId]));
    return {
      ending: earlier.map((report) => ({ id: report.adId as number, externalAdId: report.externalAdId })),
      scannedTo: Math.max(sync.endScan, ...ids),
    };
  }
  const inStock = await stockKeys(env.STOCKS, sync.id);
  const ending: { id: number; externalAdId: number | null }[] = [];
  let scannedTo = sync.endScan;
  for (;;) {
    const page = await db
      .select({ id: ads.id, externalAdId: ads.externalAdId })
      .from(ads)
      .where(and(syncedAdsWhere(sync.userId, sync.removal), gt(ads.id, scannedTo)))
      .orderBy(asc(ads.id))
      .limit(SCAN_ADS);
    for (const ad of page) {
      scannedTo = ad.id;
      if (!inStock.has(ad.externalAdId as number)) ending.push(ad);
      if (ending.length === CHUNK_ITEMS) return { ending, scannedTo };
    }
    if (page.length < SCAN_ADS) return { ending, scannedTo };
  }
}

/**
 * The next chunk of ads the stock no longer holds: reported as ended (planned first), taken off every
 * target they are on or being placed on, then deleted or archived as the sync says; the row moves past
 * them in one D1 batch only the first run of the step can make. A step run again finds what the dead one
 * did: a removal under way is not asked again, an ad gone is not written again.
 */
export async function endAds(ctx: ServiceContext, sync: SyncRow): Promise<boolean> {
  const { db, env } = ctx;
  const earlier = await getChunk(env.STOCKS, sync.id, "ended", sync.endChunks);
  const { ending, scannedTo } = await adsToEnd(ctx, sync, earlier);
  if (ending.length === 0) return false;
  const seqOf = (at: number) => sync.items + sync.ended + at + 1;
  const reports: ItemReport[] = ending.map((ad, at) => ({
    seq: seqOf(at),
    externalAdId: ad.externalAdId,
    outcome: "ended",
    planned: "ended",
    adId: ad.id,
    targets: [],
    errorDetails: [],
  }));
  if (!earlier) await putChunk(env.STOCKS, sync.id, "ended", sync.endChunks, reports);
  const catalogue = await loadCatalogue(db);
  const known = await syncedAdsOf(
    db,
    sync.userId,
    ending.flatMap((ad) => (ad.externalAdId === null ? [] : [ad.externalAdId])),
  );
  const present = ending.flatMap((ad, at) => {
    const synced = known.get(ad.externalAdId as number);
    if (synced?.id !== ad.id) return [];
    // Ended: on no target, so off every target it is on.
    const targets = targetPlan(catalogue, { wanted: [], categoryId: null, ad: synced, changed: false });
    return [{ report: reports[at] as ItemReport, adId: ad.id, targets }];
  });
  await queueTargets(ctx, { sync, items: present, charged: { cents: 0 } });
  const ids = present.map((ad) => ad.adId);
  if (ids.length > 0) {
    if (sync.removal === "delete") await deleteAdsBatch(ctx, { userId: sync.userId, adId: ids });
    else await patchAdsBatch(ctx, { userId: sync.userId, adId: ids, status: "archive" });
  }
  await putChunk(env.STOCKS, sync.id, "ended", sync.endChunks, reports);
  await db.batch([
    db
      .update(syncs)
      .set({
        endScan: scannedTo,
        endChunks: sync.endChunks + 1,
        ended: sql`${syncs.ended} + ${reports.length}`,
        updatedAt: nowIso(),
      })
      .where(and(eq(syncs.id, sync.id), eq(syncs.endChunks, sync.endChunks))),
    eventOf(db, {
      type: "sync.progress",
      userId: sync.userId,
      data: sql`json_object('syncId', ${sync.id}, 'applied', ${sync.items}, 'items', ${sync.items}, 'ended', ${reports.length})`,
    }),
  ]);
  return true;
}
