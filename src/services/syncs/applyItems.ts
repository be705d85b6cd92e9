// A sync step's items: each planned (plan.ts), its ad written, then its targets' jobs queued (queueTargets.ts).
import { and, eq, sql } from "drizzle-orm";
import { syncs } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { createAd } from "../ads/createAd";
import { updateAd } from "../ads/updateAd";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { placingPrice } from "../catalogue/features";
import { eventOf } from "../events/events";
import { queueImages } from "../images/images";
import type { ServiceContext } from "../shared/context";
import { type ItemPlan, planItem, type SyncedAd, sameImages, syncedAdsOf } from "./plan";
import { type Charged, MODE_OF, queueTargets, refusalOf } from "./queueTargets";
import type { SyncItem, SyncTargetResult } from "./schemas";
import { CHUNK_ITEMS, getChunk, type ItemReport, plannedReport, putChunk } from "./stockStore";
import type { StepOutcome, SyncRow } from "./syncViews";

/**
 * The stock's next chunk applied: each item's ad written (or found unchanged), then each target's jobs
 * queued, one publish call per target and action for the chunk; the report stored; then the sync's row
 * moved past the chunk with its counts, in one D1 batch that only the first run of the step can make.
 */
export async function applyItems(ctx: ServiceContext, sync: SyncRow): Promise<StepOutcome> {
  const { db, env } = ctx;
  if (sync.cursor >= sync.items) {
    await db.update(syncs).set({ phase: "ending", updatedAt: nowIso() }).where(eq(syncs.id, sync.id));
    return "more";
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
    lines.flatMap((line) => (line.externalAdId === null ? [] : [line.externalAdId])),
  );
  const plans = new Map(
    lines.flatMap((line) =>
      line.item
        ? [[line.seq, planItem(catalogue, line.item, line.hash ?? "", known.get(line.item.externalAdId))] as const]
        : [],
    ),
  );
  const earlierOf = new Map(earlier.map((report) => [report.seq, report]));
  const reports = lines.map((line) =>
    plannedReport(
      line,
      plans.get(line.seq),
      earlierOf.get(line.seq),
      line.externalAdId === null ? undefined : known.get(line.externalAdId)?.id,
    ),
  );
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
  await queueTargets(ctx, { sync, items: placing, charged });
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
  return "more";
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
  // The step's own placements and updates carry the images: each waits for them (`noImageOpen`), so no
  // stored image asks for an update of its own.
  if (imagesChanged)
    await queueImages(ctx, {
      adId,
      images: images.map((url) => ({ image: { url } })),
      autoupdate: false,
      replace: true,
    });
  return adId;
}
