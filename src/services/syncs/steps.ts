import { and, asc, count, desc, eq, gt, lt, sql } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { ads, type SyncOutcome, syncs } from "../../db/schema";
import type { ShardEnv } from "../../env";
import { DomainError, type ErrorDetail } from "../../lib/errors";
import { formatDateTime, nowIso } from "../../lib/time";
import type { PublishTarget } from "../../lib/vocabulary";
import { deleteAdsBatch, patchAdsBatch } from "../ads/batches";
import { createAd, updateAd } from "../ads/commands";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { placingPrice } from "../catalogue/features";
import { eventOf } from "../events/events";
import { queueImages } from "../images/images";
import { requestPublishing } from "../publishing/publishRequests";
import { callerOf, requireUser } from "../shared/access";
import type { JobContext, ServiceContext } from "../shared/context";
import { type ItemPlan, planItem, type SyncedAd, sameImages, syncedAdsOf, syncedAdsWhere, targetPlan } from "./plan";
import type { SyncItem, SyncTargetResult, SyncView } from "./schemas";
import {
  CHUNK_ITEMS,
  deleteStock,
  getChunk,
  type ItemReport,
  putChunk,
  type StoredLine,
  stockKeys,
} from "./stockStore";

type SyncRow = typeof syncs.$inferSelect;

/** The publish call of each target action. */
const MODE_OF = { place: "publish", update: "update", remove: "unpublish" } as const;

/** How long a finished sync, its stock and its report are kept. */
export const SYNC_RETENTION_MS = 30 * 86_400_000;

export const syncView = (row: SyncRow): SyncView => ({
  syncId: row.id,
  userId: row.userId,
  state: row.state,
  phase: row.phase,
  removal: row.removal,
  maxEndedPercent: row.maxEndedPercent,
  items: row.items,
  created: row.created,
  updated: row.updated,
  unchanged: row.unchanged,
  ended: row.ended,
  refused: row.refused,
  applied: Math.min(row.cursor, row.items),
  charged: row.charged,
  reason: row.reason,
  createdAt: formatDateTime(row.createdAt),
  finishedAt: row.finishedAt ? formatDateTime(row.finishedAt) : null,
});

/** Queues a sync's next step: a lane job of its client (`ClientLanes`), which runs it within the client's share. */
export async function sendSyncStep(env: ShardEnv, input: { syncId: number; requestId?: string | undefined }) {
  await env.JOBS.send({ kind: "sync", syncId: input.syncId, requestId: input.requestId });
}

/** What a step's work runs with: the sync's client as the caller (its tenancy kept with the sync). */
const stepContext = (ctx: JobContext, sync: SyncRow): ServiceContext => ({
  db: ctx.db,
  env: ctx.env,
  caller: callerOf({ id: sync.clientId, internal: sync.internal, partner: sync.partner }),
  mediaBase: sync.mediaBase,
  requestId: ctx.requestId,
});

/**
 * One step of a running sync (a lane job): the stock's next chunk applied (CHUNK_ITEMS items), or, once
 * every chunk is, the next chunk of ads it ends; then the next step is queued, or the sync finishes. A
 * step that dies is run again (the lanes keep the job) from the sync's row, which moves only when a
 * chunk's report is stored: each item is planned afresh from what is stored, so what the dead step did is
 * found done (the ad by its externalAdId, a placement by the one open job per listing) and not done twice,
 * and the report says what the dead step planned.
 */
export async function runSyncStep(ctx: JobContext, input: { syncId: number }): Promise<void> {
  const sync = await ctx.db.select().from(syncs).where(eq(syncs.id, input.syncId)).get();
  if (sync?.state !== "running") return;
  const work = stepContext(ctx, sync);
  try {
    await requireUser(ctx.db, work.caller, sync.userId);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return finish(ctx, sync, "failed", "the user is no longer there");
  }
  const more = sync.phase === "items" ? await applyItems(work, sync) : await endAds(work, sync);
  if (more) await sendSyncStep(ctx.env, { syncId: sync.id, requestId: ctx.requestId });
  else await finish(ctx, sync, "finished", null);
}

/** Ends a sync that could not finish (its job gave up): failed, with the reason. */
export async function failSync(ctx: JobContext, input: { syncId: number; reason: string }): Promise<void> {
  const sync = await ctx.db.select().from(syncs).where(eq(syncs.id, input.syncId)).get();
  if (sync?.state === "running") await finish(ctx, sync, "failed", input.reason);
}

async function finish(ctx: JobContext, sync: SyncRow, state: "finished" | "failed", reason: string | null) {
  const { db } = ctx;
  await db.batch([
    db
      .update(syncs)
      .set({ state, phase: "done", reason, updatedAt: nowIso(), finishedAt: nowIso() })
      .where(and(eq(syncs.id, sync.id), eq(syncs.state, "running"))),
    eventOf(db, {
      type: "sync.finished",
      userId: sync.userId,
      data: sql`(SELECT json_object('syncId', id, 'state', ${state}, 'items', items, 'created', created, 'updated', updated,
        'unchanged', unchanged, 'ended', ended, 'refused', refused, 'charged', charged) FROM ${syncs} WHERE id = ${sync.id})`,
    }),
  ]);
}

/** What a step charged: the placements it queued, at the price each was planned at. */
type Charged = { cents: number };

/** The problems of a refused write, or the error itself when it is not a refusal. */
const refusalOf = (error: unknown): ErrorDetail[] => {
  if (error instanceof DomainError) return error.details;
  throw error;
};

/**
 * An item's report before it is applied: what the step plans, its outcome and each target's action (kept
 * when the step runs again: the report then says what the dead run planned and queued).
 */
const plannedReport = (line: StoredLine, plan: ItemPlan | undefined, earlier: ItemReport | undefined): ItemReport => ({
  seq: line.seq,
  externalAdId: line.externalAdId,
  outcome: null,
  planned: earlier?.planned ?? (line.problems ? "refused" : (plan?.outcome ?? null)),
  adId: earlier?.adId ?? plan?.ad?.id ?? null,
  targets:
    earlier?.targets ??
    (plan?.targets ?? []).map(({ portal, action }) => ({ portal, action, jobId: null, refusal: null })),
  errorDetails: line.problems ?? [],
});

/**
 * The stock's next chunk applied: each item's ad written (or found unchanged), then each target's jobs
 * queued, one publish call per target and action for the chunk; the report stored; then the sync's row
 * moved past the chunk with its counts, in one D1 batch that only the first run of the step can make.
 */
async function applyItems(ctx: ServiceContext, sync: SyncRow): Promise<boolean> {
  const { db, env } = ctx;
  if (sync.cursor >= sync.items) {
    await db.update(syncs).set({ phase: "ending", updatedAt: nowIso() }).where(eq(syncs.id, sync.id));
    return true;
  }
  const chunk = Math.floor(sync.cursor / CHUNK_ITEMS);
  const [lines = [], earlier = []] = await Promise.all([
    getChunk(env.STOCKS, sync.id, "stock", chunk),
    getChunk(env.STOCKS, sync.id, "report", chunk),
  ]);
  const catalogue = await loadCatalogue(db);
  const known = await syncedAdsOf(
    db,
    sync.userId,
    lines.flatMap((line) => (line.item ? [line.item.externalAdId] : [])),
  );
  const plans = new Map(
    lines.flatMap((line) =>
      line.item
        ? [[line.seq, planItem(catalogue, line.item, line.hash ?? "", known.get(line.item.externalAdId))] as const]
        : [],
    ),
  );
  const earlierOf = new Map(earlier.map((report) => [report.seq, report]));
  const reports = lines.map((line) => plannedReport(line, plans.get(line.seq), earlierOf.get(line.seq)));
  if (earlier.length === 0) await putChunk(env.STOCKS, sync.id, "report", chunk, reports);
  const charged: Charged = { cents: 0 };
  const placing: { report: ItemReport; adId: number; targets: ItemPlan["targets"] }[] = [];
  for (const [at, line] of lines.entries()) {
    const report = reports[at] as ItemReport;
    const plan = plans.get(line.seq);
    if (!line.item || !plan) {
      report.outcome = "refused";
      continue;
    }
    try {
      const adId = await writeItem(ctx, { sync, item: line.item, hash: line.hash ?? "", plan });
      // A new ad is on no target yet: each target it names is placed.
      const targets = plan.ad ? plan.targets : planItem(catalogue, line.item, line.hash ?? "", undefined).targets;
      report.outcome = report.planned ?? plan.outcome;
      report.adId = adId;
      report.targets = queuedBefore(report, { targets, ad: plan.ad, item: line.item, catalogue, charged });
      placing.push({ report, adId, targets });
    } catch (error) {
      report.outcome = "refused";
      report.errorDetails = refusalOf(error);
      report.targets = [];
    }
  }
  await queueTargets(ctx, sync, placing, charged);
  await putChunk(env.STOCKS, sync.id, "report", chunk, reports);
  const tally = (outcome: string) => reports.filter((report) => report.outcome === outcome).length;
  const applied = sync.cursor + lines.length;
  await db.batch([
    db
      .update(syncs)
      .set({
        cursor: applied,
        created: sql`${syncs.created} + ${tally("created")}`,
        updated: sql`${syncs.updated} + ${tally("updated")}`,
        unchanged: sql`${syncs.unchanged} + ${tally("unchanged")}`,
        refused: sql`${syncs.refused} + ${tally("refused")}`,
        charged: sql`${syncs.charged} + ${charged.cents}`,
        updatedAt: nowIso(),
      })
      .where(and(eq(syncs.id, sync.id), eq(syncs.cursor, sync.cursor))),
    eventOf(db, {
      type: "sync.progress",
      userId: sync.userId,
      data: sql`json_object('syncId', ${sync.id}, 'applied', ${applied}, 'items', ${sync.items})`,
    }),
  ]);
  return true;
}

/**
 * What a dead run of the step planned for an item and queued, that this run no longer plans (it found the
 * job open, or done): reported with its open job, and a placement charged as the dead run charged it. On
 * a first run the plan is the same, and nothing is carried.
 */
function queuedBefore(
  report: ItemReport,
  now: {
    targets: ItemPlan["targets"];
    ad: SyncedAd | undefined;
    item: SyncItem;
    catalogue: Catalogue;
    charged: Charged;
  },
): SyncTargetResult[] {
  return report.targets
    .filter((planned) => !now.targets.some((target) => target.portal === planned.portal))
    .map((planned) => {
      if (planned.action === "place")
        now.charged.cents += placingPrice(now.catalogue, now.item.categoryId, planned.portal);
      const open = now.ad?.targets.get(planned.portal)?.open.get(MODE_OF[planned.action]);
      return { ...planned, jobId: open ?? planned.jobId };
    });
}

/**
 * The item's ad written as planned: created, or updated in full (a field the item leaves out is cleared),
 * with its images replaced when their list changed; nothing for an unchanged item. Answers the ad's id.
 */
async function writeItem(
  ctx: ServiceContext,
  input: { sync: SyncRow; item: SyncItem; hash: string; plan: ItemPlan },
): Promise<number> {
  const { sync, item, hash, plan } = input;
  const { images, targets: _targets, ...fields } = item;
  if (plan.outcome === "unchanged" && plan.ad) return plan.ad.id;
  const adId = plan.ad
    ? await updateAd(ctx, {
        contactId: null,
        folderId: null,
        imagetext: null,
        url: null,
        provider: null,
        ...fields,
        misc: { licensePlate: fields.misc?.licensePlate ?? null },
        adId: plan.ad.id,
        syncHash: hash,
      })
    : await createAd(ctx, { ...fields, userId: sync.userId, syncHash: hash });
  const imagesChanged = plan.ad ? !sameImages(hash, plan.ad.storedHash) : images.length > 0;
  if (imagesChanged)
    await queueImages(ctx, {
      adId,
      images: images.map((url) => ({ image: { url } })),
      autoupdate: true,
      replace: true,
    });
  return adId;
}

/**
 * Each target's jobs for the items: one publish call per target and action (placements, updates,
 * removals), each item's report per target kept with its job or its refusal, and each placement queued
 * charged at its price.
 */
async function queueTargets(
  ctx: ServiceContext,
  sync: SyncRow,
  items: { report: ItemReport; adId: number; targets: ItemPlan["targets"] }[],
  charged: Charged,
): Promise<void> {
  type Asked = { target: SyncTargetResult; price: number };
  const calls = new Map<string, { portal: PublishTarget; action: keyof typeof MODE_OF; ads: Map<number, Asked> }>();
  for (const { report, adId, targets } of items)
    for (const { portal, action, price } of targets) {
      const target: SyncTargetResult = { portal, action, jobId: null, refusal: null };
      report.targets.push(target);
      const key = `${portal} ${action}`;
      const call = calls.get(key) ?? { portal, action, ads: new Map<number, Asked>() };
      call.ads.set(adId, { target, price });
      calls.set(key, call);
    }
  for (const call of calls.values()) {
    const adIds = [...call.ads.keys()];
    const outcomes = await requestPublishing(ctx, {
      userId: sync.userId,
      adIds,
      portal: call.portal,
      mode: MODE_OF[call.action],
      images: true,
    }).catch((error: unknown) =>
      adIds.map((adId) => ({ adId, errorDetails: refusalOf(error), queueItemId: undefined })),
    );
    for (const outcome of outcomes) {
      const asked = call.ads.get(outcome.adId);
      if (!asked) continue;
      asked.target.jobId = outcome.queueItemId ?? null;
      asked.target.refusal = outcome.errorDetails[0] ?? null;
      if (call.action === "place" && asked.target.jobId !== null) charged.cents += asked.price;
    }
  }
}

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
async function endAds(ctx: ServiceContext, sync: SyncRow): Promise<boolean> {
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
  await queueTargets(ctx, sync, present, { cents: 0 });
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

/** `GET /syncs/<syncId>`: the sync, as its client (or an internal client) may see it. */
export async function getSync(ctx: ServiceContext, syncId: number): Promise<SyncView> {
  return syncView(await visibleSync(ctx, syncId));
}

async function visibleSync(ctx: ServiceContext, syncId: number): Promise<SyncRow> {
  const row = await ctx.db.select().from(syncs).where(eq(syncs.id, syncId)).get();
  const visible =
    row &&
    (await requireUser(ctx.db, ctx.caller, row.userId).then(
      () => true,
      (error: unknown) => (error instanceof DomainError ? false : Promise.reject(error)),
    ));
  if (!row || !visible) throw DomainError.of("sync_not_found", `syncId: sync ${syncId} not found`);
  return row;
}

/** An item's report as the API shows it. */
const reportView = ({ planned: _planned, ...report }: ItemReport) => report;

/** Item `seq`'s report: as applied, or (not yet applied) the line with no outcome. */
async function chunkReports(bucket: R2Bucket, sync: SyncRow, chunk: number): Promise<ItemReport[]> {
  const reported = await getChunk(bucket, sync.id, "report", chunk);
  if (reported?.every((report) => report.outcome !== null)) return reported;
  const lines = (await getChunk(bucket, sync.id, "stock", chunk)) ?? [];
  return lines.map((line) => plannedReport(line, undefined, undefined));
}

/**
 * `GET /syncs/<syncId>/items`: the sync's report per item, in stock order, then the ads it ended; with
 * `outcome`, those of that outcome alone. A page reads the chunks it covers (with `outcome`, the chunks
 * up to its end).
 */
export async function listSyncItems(
  ctx: ServiceContext,
  input: { syncId: number; page: number; itemsPerPage: number; outcome?: SyncOutcome | undefined },
) {
  const sync = await visibleSync(ctx, input.syncId);
  const bucket = ctx.env.STOCKS;
  const from = (input.page - 1) * input.itemsPerPage;
  const to = from + input.itemsPerPage;
  const stockChunks = Math.ceil(sync.items / CHUNK_ITEMS);
  const chunks = [
    ...Array.from({ length: stockChunks }, (_, n) => () => chunkReports(bucket, sync, n)),
    ...Array.from(
      { length: sync.endChunks },
      (_, n) => async () => (await getChunk(bucket, sync.id, "ended", n)) ?? [],
    ),
  ];
  const totalItems = input.outcome ? sync[input.outcome] : sync.items + sync.ended;
  const items: ItemReport[] = [];
  let passed = 0;
  // Without a filter, each chunk but the last holds CHUNK_ITEMS: the page starts in a known chunk.
  let at = input.outcome ? 0 : Math.floor(from / CHUNK_ITEMS);
  passed = input.outcome ? 0 : at * CHUNK_ITEMS;
  for (; at < chunks.length && passed < to; at += 1) {
    const reports = await (chunks[at] as () => Promise<ItemReport[]>)();
    for (const report of reports) {
      if (input.outcome && report.outcome !== input.outcome) continue;
      if (passed >= from && passed < to) items.push(report);
      passed += 1;
    }
  }
  return { items: items.map(reportView), totalItems, page: input.page, itemsPerPage: input.itemsPerPage };
}

/** `GET /syncs/?userId=`: the user's syncs, newest first. */
export async function listSyncs(ctx: ServiceContext, input: { userId: number; page: number; itemsPerPage: number }) {
  await requireUser(ctx.db, ctx.caller, input.userId);
  const where = eq(syncs.userId, input.userId);
  const { total, rows } = await namedBatch(ctx.db, {
    total: ctx.db.select({ n: count() }).from(syncs).where(where),
    rows: ctx.db
      .select()
      .from(syncs)
      .where(where)
      .orderBy(desc(syncs.id))
      .limit(input.itemsPerPage)
      .offset((input.page - 1) * input.itemsPerPage),
  });
  return {
    items: rows.map(syncView),
    totalItems: total[0]?.n ?? 0,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
}

/** The syncs that ended more than SYNC_RETENTION_MS ago: their stock and report, then their row. Answers how many. */
export async function purgeOldSyncs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const before = new Date(ctx.now.getTime() - SYNC_RETENTION_MS).toISOString();
  const old = await ctx.db.select({ id: syncs.id }).from(syncs).where(lt(syncs.updatedAt, before)).limit(input.limit);
  for (const { id } of old) {
    await deleteStock(ctx.env.STOCKS, id);
    await ctx.db.delete(syncs).where(eq(syncs.id, id));
  }
  return old.length;
}
