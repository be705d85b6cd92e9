// A sync step that ends the ads the stock no longer holds: their jobs ended, off every target, then deleted or archived.
import { and, asc, eq, gt, ne, sql } from "drizzle-orm";
import { inList } from "../../db/inList";
import { ads, jobIsOpen, publishJobs, syncs } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { deleteAdsBatch, patchAdsBatch } from "../ads/batches";
import { loadCatalogue } from "../catalogue/catalogue";
import { eventOf } from "../events/events";
import { withdrawUnstartedJobs } from "../publishing/publishRequests";
import type { ServiceContext } from "../shared/context";
import { syncedAdsOf, syncedAdsWhere, targetPlan } from "./plan";
import { queueTargets } from "./queueTargets";
import { CHUNK_ITEMS, getChunk, type ItemReport, putChunk, stockKeys } from "./stockStore";
import type { StepOutcome, SyncRow } from "./syncViews";

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

/** How long an ending step waits for the jobs of its ads before it looks again. */
export const ENDING_WAIT_SECONDS = 5;

/** The ads of `adIds` with a publish job open (pending or processing: a placement in flight, a removal). */
async function withOpenJobs(ctx: ServiceContext, adIds: number[]): Promise<Set<number>> {
  if (adIds.length === 0) return new Set();
  const open = await ctx.db
    .selectDistinct({ adId: publishJobs.adId })
    .from(publishJobs)
    .where(and(inList(publishJobs.adId, adIds), jobIsOpen(publishJobs.status)));
  return new Set(open.map((job) => job.adId));
}

/**
 * The next chunk of ads the stock no longer holds, ended in order, each as far as it can go: its jobs
 * that never started are cancelled (refunded); while a job of it is open (a placement in flight, a
 * removal) it waits; then it is taken off every target it is on, once; then, with no job open, it is
 * deleted or archived as the sync says. So nothing is ended under a placement in flight, and no listing
 * outlives its ad. The step answers `waiting` until every ad of the chunk is ended (it runs again in
 * ENDING_WAIT_SECONDS), then moves the row past the chunk in one D1 batch only the first run of the step
 * can make. A run after a crash finds what the dead one did (the report, the open jobs, the ads gone).
 */
export async function endAds(ctx: ServiceContext, sync: SyncRow): Promise<StepOutcome> {
  const { db, env } = ctx;
  const earlier = await getChunk(env.STOCKS, sync.id, "ended", sync.endChunks);
  const { ending, scannedTo } = await adsToEnd(ctx, sync, earlier);
  if (ending.length === 0) return "done";
  const seqOf = (at: number) => sync.items + sync.ended + at + 1;
  const reports: ItemReport[] =
    earlier ??
    ending.map((ad, at) => ({
      seq: seqOf(at),
      externalAdId: ad.externalAdId,
      outcome: "ended",
      planned: "ended",
      adId: ad.id,
      targets: [],
      errorDetails: [],
    }));
  if (!earlier) await putChunk(env.STOCKS, sync.id, "ended", sync.endChunks, reports);
  const left = await notYetEnded(ctx, sync, ending);
  await withdrawUnstartedJobs(ctx, { adIds: left, reason: `ended by sync ${sync.id} before it started` });
  const busy = await withOpenJobs(ctx, left);
  const catalogue = await loadCatalogue(db);
  const known = await syncedAdsOf(
    db,
    sync.userId,
    ending.flatMap((ad) => (ad.externalAdId === null ? [] : [ad.externalAdId])),
  );
  // Off every target it is on, once (the report keeps the removals asked): then it waits for them.
  const removals = reports.flatMap((report) => {
    const synced = known.get(report.externalAdId as number);
    if (synced?.id !== report.adId || !left.includes(synced.id) || busy.has(synced.id) || report.targets.length > 0)
      return [];
    const targets = targetPlan(catalogue, { wanted: [], categoryId: null, ad: synced, changed: false });
    return targets.length > 0 ? [{ report, adId: synced.id, targets }] : [];
  });
  await queueTargets(ctx, { sync, items: removals, charged: { cents: 0 } });
  await putChunk(env.STOCKS, sync.id, "ended", sync.endChunks, reports);
  const removing = new Set(removals.filter((r) => r.report.targets.some((t) => t.jobId !== null)).map((r) => r.adId));
  const ready = left.filter((adId) => !busy.has(adId) && !removing.has(adId));
  if (ready.length > 0) {
    if (sync.removal === "delete") await deleteAdsBatch(ctx, { userId: sync.userId, adId: ready, unlessJobOpen: true });
    else await patchAdsBatch(ctx, { userId: sync.userId, adId: ready, status: "archive", unlessJobOpen: true });
  }
  if ((await notYetEnded(ctx, sync, ending)).length > 0) return "waiting";
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
  return "more";
}

/** The chunk's ads still there to end: not deleted, or not archived yet when the sync archives. */
async function notYetEnded(ctx: ServiceContext, sync: SyncRow, ending: { id: number }[]): Promise<number[]> {
  if (ending.length === 0) return [];
  const there = await ctx.db
    .select({ id: ads.id })
    .from(ads)
    .where(
      and(
        eq(ads.userId, sync.userId),
        inList(
          ads.id,
          ending.map((ad) => ad.id),
        ),
        sync.removal === "archive" ? ne(ads.status, "archive") : undefined,
      ),
    );
  return there.map((ad) => ad.id);
}
