import { and, asc, count, desc, eq, gt, inArray, isNotNull, lte, ne, sql } from "drizzle-orm";
import { type Db, d1Statement, namedBatch } from "../../db/client";
import { inIds } from "../../db/inList";
import { ads, type SyncTargetResult, syncItems, syncs } from "../../db/schema";
import type { ShardEnv } from "../../env";
import { DomainError, type ErrorDetail } from "../../lib/errors";
import { formatDateTime, nowIso } from "../../lib/time";
import type { PublishTarget } from "../../lib/vocabulary";
import { deleteAdsBatch, patchAdsBatch } from "../ads/batches";
import { createAd, updateAd } from "../ads/commands";
import { loadCatalogue } from "../catalogue/catalogue";
import { eventOf } from "../events/events";
import { queueImages } from "../images/images";
import { requestPublishing } from "../publishing/publishRequests";
import { callerOf, requireUser } from "../shared/access";
import type { JobContext, ServiceContext } from "../shared/context";
import { endedAdsWhere, type ItemPlan, planItem, syncedAdsOf, type TargetAction, targetPlan } from "./plan";
import type { SyncItem, SyncView } from "./schemas";

type SyncRow = typeof syncs.$inferSelect;

/** Items (or ended ads) one step applies: a step is a lane job of a few seconds, and what a crash repeats. */
const ITEMS_PER_STEP = 50;

/** The publish call of each target action. */
const MODE_OF = { place: "publish", update: "update", remove: "unpublish" } as const;

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

/**
 * Statements of a sync's write in one D1 batch (one transaction), raw SQL among them (Drizzle's own batch
 * takes none with parameters).
 */
export const syncBatch = (d1: D1Database, statements: Parameters<typeof d1Statement>[1][]) =>
  d1.batch(statements.map((statement) => d1Statement(d1, statement)));

/** A sync's event, for the batch of the change it reports. */
export const syncEvent = (db: Db, event: Parameters<typeof eventOf>[1]) => eventOf(db, event);

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
 * One step of a running sync (a lane job): the next ITEMS_PER_STEP items of its stock applied, or, once
 * they are all applied, the next ads it ends; then the next step is queued, or the sync finishes. A step
 * that dies is run again (the lanes keep the job) from the sync's cursor: each item is planned afresh
 * from what is stored, so what the dead step did is found done (the ad by its externalAdId, a job by the
 * one open job per listing) and not done twice, and its planned outcome, kept, is what the report says.
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

/** The sync's counts as its items say, in one statement (a repeated step counts nothing twice). */
const recount = (syncId: number) =>
  sql`UPDATE ${syncs} SET (created, updated, unchanged, ended, refused) = (
    SELECT coalesce(sum(outcome = 'created'), 0), coalesce(sum(outcome = 'updated'), 0), coalesce(sum(outcome = 'unchanged'), 0),
      coalesce(sum(outcome = 'ended'), 0), coalesce(sum(outcome = 'refused'), 0)
    FROM ${syncItems} WHERE sync_id = ${syncId}) WHERE id = ${syncId}`;

async function finish(ctx: JobContext, sync: SyncRow, state: "finished" | "failed", reason: string | null) {
  const { db } = ctx;
  await syncBatch(ctx.env.shard.d1, [
    recount(sync.id),
    db
      .update(syncs)
      .set({ state, phase: "done", reason, updatedAt: nowIso(), finishedAt: nowIso() })
      .where(and(eq(syncs.id, sync.id), eq(syncs.state, "running"))),
    syncEvent(db, {
      type: "sync.finished",
      userId: sync.userId,
      data: sql`(SELECT json_object('syncId', id, 'state', ${state}, 'items', items, 'created', created, 'updated', updated,
        'unchanged', unchanged, 'ended', ended, 'refused', refused, 'charged', charged) FROM ${syncs} WHERE id = ${sync.id})`,
    }),
  ]);
}

/** What a step stores of an item it applied. */
interface ItemResult {
  seq: number;
  outcome: string;
  planned: string;
  adId: number | null;
  targets: SyncTargetResult[];
  problems: ErrorDetail[];
  price: number;
}

/** The problems of a refused write, or the error itself when it is not a refusal. */
const refusalOf = (error: unknown): ErrorDetail[] => {
  if (error instanceof DomainError) return error.details;
  throw error;
};

/** The next items of the stock applied: the ads written, then each target's jobs queued, per target in one call. */
async function applyItems(ctx: ServiceContext, sync: SyncRow): Promise<boolean> {
  const { db } = ctx;
  const rows = await db
    .select()
    .from(syncItems)
    .where(and(eq(syncItems.syncId, sync.id), gt(syncItems.seq, sync.cursor), lte(syncItems.seq, sync.items)))
    .orderBy(asc(syncItems.seq))
    .limit(ITEMS_PER_STEP);
  if (rows.length === 0) {
    await db.update(syncs).set({ phase: "ending", updatedAt: nowIso() }).where(eq(syncs.id, sync.id));
    return true;
  }
  const catalogue = await loadCatalogue(db);
  const pending = rows.filter((row) => row.outcome !== "refused" && row.item);
  const known = await syncedAdsOf(
    db,
    sync.userId,
    pending.map((row) => row.externalAdId as number),
  );
  const results: ItemResult[] = [];
  const planned = new Map<number, { row: (typeof rows)[number]; item: SyncItem; plan: ItemPlan; adId: number }>();
  for (const row of pending) {
    const item = row.item as unknown as SyncItem;
    const hash = row.hash ?? "";
    let plan = planItem(catalogue, item, hash, known.get(item.externalAdId));
    const outcome = row.planned ?? plan.outcome;
    try {
      const adId = await writeItem(ctx, { sync, item, hash, plan, previousImages: await imagesOf(db, row) });
      // A new ad is on no target yet: each target it names is placed.
      if (!plan.ad) plan = planItem(catalogue, item, hash, undefined);
      planned.set(row.seq, { row, item, plan, adId });
      results.push({ seq: row.seq, outcome, planned: outcome, adId, targets: [], problems: [], price: 0 });
    } catch (error) {
      const problems = refusalOf(error);
      results.push({
        seq: row.seq,
        outcome: "refused",
        planned: outcome,
        adId: plan.ad?.id ?? null,
        targets: [],
        problems,
        price: 0,
      });
    }
  }
  await queueTargets(
    ctx,
    sync,
    [...planned.values()].map(({ row, plan, adId }) => ({ seq: row.seq, adId, targets: plan.targets })),
    results,
  );
  const last = rows.at(-1)?.seq ?? sync.cursor;
  await storeResults(ctx, sync, results, {
    cursor: last,
    progress: sql`json_object('syncId', ${sync.id}, 'applied', ${Math.min(last, sync.items)}, 'items', ${sync.items})`,
  });
  return true;
}

/**
 * The images the item's ad was last synced with (its previous sync's item), so that an update replaces
 * the ad's images only when the list changed.
 */
async function imagesOf(db: Db, row: typeof syncItems.$inferSelect): Promise<string[] | undefined> {
  if (row.externalAdId === null) return undefined;
  const earlier = await db
    .select({ images: sql<string | null>`${syncItems.item} -> 'images'` })
    .from(syncItems)
    .innerJoin(syncs, eq(syncs.id, syncItems.syncId))
    .where(
      and(
        ne(syncItems.syncId, row.syncId),
        eq(syncItems.externalAdId, row.externalAdId),
        inArray(syncItems.outcome, ["created", "updated", "unchanged"]),
        eq(syncs.userId, sql`(SELECT user_id FROM ${syncs} WHERE id = ${row.syncId})`),
      ),
    )
    .orderBy(desc(syncItems.syncId))
    .limit(1)
    .get();
  return earlier?.images ? (JSON.parse(earlier.images) as string[]) : undefined;
}

/**
 * The item's ad written as planned: created, or updated in full (a field the item leaves out is cleared),
 * with its images replaced when their list changed; nothing for an unchanged item. Answers the ad's id.
 */
async function writeItem(
  ctx: ServiceContext,
  input: { sync: SyncRow; item: SyncItem; hash: string; plan: ItemPlan; previousImages: string[] | undefined },
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
  const imagesChanged = !plan.ad || JSON.stringify(input.previousImages ?? []) !== JSON.stringify(images);
  if (imagesChanged && (images.length > 0 || plan.ad))
    await queueImages(ctx, {
      adId,
      images: images.map((url) => ({ image: { url } })),
      autoupdate: true,
      replace: true,
    });
  return adId;
}

/**
 * Each target's jobs for the step's items: one publish call per target and action (placements,
 * updates, removals), each item's result per target kept with its job or its refusal, and the
 * placements' prices added up as charged.
 */
async function queueTargets(
  ctx: ServiceContext,
  sync: SyncRow,
  items: { seq: number; adId: number; targets: ItemPlan["targets"] }[],
  results: ItemResult[],
): Promise<void> {
  const resultOf = new Map(results.map((result) => [result.seq, result]));
  type Asked = { result: ItemResult; target: SyncTargetResult; price: number };
  const calls = new Map<string, { portal: PublishTarget; action: TargetAction; ads: Map<number, Asked> }>();
  for (const item of items) {
    const result = resultOf.get(item.seq);
    if (!result) continue;
    for (const { portal, action, price } of item.targets) {
      const target: SyncTargetResult = { portal, action, jobId: null, refusal: null };
      result.targets.push(target);
      const key = `${portal} ${action}`;
      const call = calls.get(key) ?? { portal, action, ads: new Map<number, Asked>() };
      call.ads.set(item.adId, { result, target, price });
      calls.set(key, call);
    }
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
      if (call.action === "place" && asked.target.jobId !== null) asked.result.price += asked.price;
    }
  }
}

/**
 * A step's results in one D1 batch: each item's outcome, ad, targets and problems (one statement for all:
 * they travel as one JSON parameter), the cursor moved past them, the counts and what was charged, and
 * the progress event.
 */
async function storeResults(
  ctx: ServiceContext,
  sync: SyncRow,
  results: ItemResult[],
  step: { cursor: number; progress: ReturnType<typeof sql> },
): Promise<void> {
  const charged = results.reduce((sum, result) => sum + result.price, 0);
  const stored = results.map(({ seq, outcome, planned, adId, targets, problems }) => ({
    seq,
    outcome,
    planned,
    adId,
    targets,
    problems,
  }));
  const { db } = ctx;
  await syncBatch(ctx.env.shard.d1, [
    sql`UPDATE ${syncItems} SET outcome = r.value ->> 'outcome', planned = coalesce(planned, r.value ->> 'planned'),
        ad_id = r.value ->> 'adId', targets = r.value -> 'targets', problems = r.value -> 'problems'
      FROM json_each(${JSON.stringify(stored)}) AS r
      WHERE ${syncItems.syncId} = ${sync.id} AND ${syncItems.seq} = r.value ->> 'seq'`,
    db
      .update(syncs)
      .set({ cursor: step.cursor, charged: sql`${syncs.charged} + ${charged}`, updatedAt: nowIso() })
      .where(eq(syncs.id, sync.id)),
    recount(sync.id),
    syncEvent(db, { type: "sync.progress", userId: sync.userId, data: step.progress }),
  ]);
}

/**
 * The next ads the stock no longer holds: recorded as ended (once), taken off every target they are on
 * or being placed on, then deleted or archived as the sync says. A step run again finds what the dead
 * one did: a removal under way is not asked again, an ad gone or archived is no longer found.
 */
async function endAds(ctx: ServiceContext, sync: SyncRow): Promise<boolean> {
  const { db } = ctx;
  const inStock = inIds(
    ads.externalAdId,
    db
      .select({ externalAdId: syncItems.externalAdId })
      .from(syncItems)
      .where(and(eq(syncItems.syncId, sync.id), isNotNull(syncItems.externalAdId), lte(syncItems.seq, sync.items))),
  );
  const { ending, recorded } = await namedBatch(db, {
    ending: db
      .select({ id: ads.id, externalAdId: ads.externalAdId })
      .from(ads)
      .where(endedAdsWhere(sync.userId, inStock, sync.removal))
      .orderBy(asc(ads.id))
      .limit(ITEMS_PER_STEP),
    recorded: db
      .select({ adId: syncItems.adId, seq: syncItems.seq })
      .from(syncItems)
      .where(and(eq(syncItems.syncId, sync.id), gt(syncItems.seq, sync.items))),
  });
  if (ending.length === 0) return false;
  const catalogue = await loadCatalogue(db);
  const known = await syncedAdsOf(
    db,
    sync.userId,
    ending.map((ad) => ad.externalAdId as number),
  );
  const recordedSeq = new Map(recorded.map((row) => [row.adId, row.seq]));
  // An ad a dead step recorded keeps its place; the others follow the places taken.
  const unrecorded = ending.filter((ad) => !recordedSeq.has(ad.id)).map((ad) => ad.id);
  const results: ItemResult[] = ending.map((ad) => ({
    seq: recordedSeq.get(ad.id) ?? sync.items + recorded.length + unrecorded.indexOf(ad.id) + 1,
    outcome: "ended",
    planned: "ended",
    adId: ad.id,
    targets: [],
    problems: [],
    price: 0,
  }));
  const removals = ending.flatMap((ad, at) => {
    const synced = known.get(ad.externalAdId as number);
    if (!synced || synced.id !== ad.id) return [];
    // Ended: on no target, so off every target it is on.
    const targets = targetPlan(catalogue, { wanted: [], categoryId: null, ad: synced, changed: false });
    return [{ seq: results[at]?.seq ?? 0, adId: ad.id, targets }];
  });
  await db.run(sql`INSERT INTO ${syncItems} (sync_id, seq, external_ad_id, ad_id, planned)
    SELECT ${sync.id}, value ->> 'seq', value ->> 'externalAdId', value ->> 'adId', 'ended' FROM json_each(${JSON.stringify(
      ending.map((ad, at) => ({ seq: results[at]?.seq, externalAdId: ad.externalAdId, adId: ad.id })),
    )}) WHERE true ON CONFLICT (sync_id, seq) DO NOTHING`);
  await queueTargets(ctx, sync, removals, results);
  const ids = ending.map((ad) => ad.id);
  if (sync.removal === "delete") await deleteAdsBatch(ctx, { userId: sync.userId, adId: ids });
  else await patchAdsBatch(ctx, { userId: sync.userId, adId: ids, status: "archive" });
  await storeResults(ctx, sync, results, {
    cursor: sync.cursor,
    progress: sql`json_object('syncId', ${sync.id}, 'applied', ${sync.items}, 'items', ${sync.items}, 'ended', ${results.length})`,
  });
  return true;
}

/** `GET /syncs/<syncId>`: the sync, as its client (or an internal client) may see it. */
export async function getSync(ctx: ServiceContext, syncId: number): Promise<SyncView> {
  const row = await visibleSync(ctx, syncId);
  return syncView(row);
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

/** `GET /syncs/<syncId>/items`: the sync's report per item, in stock order (ended ads after the stock). */
export async function listSyncItems(
  ctx: ServiceContext,
  input: { syncId: number; page: number; itemsPerPage: number; outcome?: string | undefined },
) {
  const sync = await visibleSync(ctx, input.syncId);
  const where = and(
    eq(syncItems.syncId, sync.id),
    input.outcome ? eq(syncItems.outcome, input.outcome as "created") : undefined,
  );
  const { total, rows } = await namedBatch(ctx.db, {
    total: ctx.db.select({ n: count() }).from(syncItems).where(where),
    rows: ctx.db
      .select()
      .from(syncItems)
      .where(where)
      .orderBy(asc(syncItems.seq))
      .limit(input.itemsPerPage)
      .offset((input.page - 1) * input.itemsPerPage),
  });
  return {
    items: rows.map((row) => ({
      seq: row.seq,
      externalAdId: row.externalAdId,
      outcome: row.outcome,
      adId: row.adId,
      targets: row.targets,
      errorDetails: row.problems,
    })),
    totalItems: total[0]?.n ?? 0,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
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
