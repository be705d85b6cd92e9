import { and, count, eq } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { inList } from "../../db/inList";
import { adFeatures, adPublications, ads } from "../../db/schema";
import type { ShardEnv } from "../../env";
import type { Page } from "../../lib/envelope";
import { formatDateTime, nowIso } from "../../lib/time";
import { type Marketplace, PUBLISH_TARGETS } from "../../lib/vocabulary";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { withAccessToken } from "./connections";

type PublicationRow = typeof adPublications.$inferSelect;
export function publishStatus(portal: (typeof PUBLISH_TARGETS)[number], row: PublicationRow | undefined) {
  const status = {
    pending: row?.pending ?? false,
    pendingDate: formatDateTime(row?.pendingDate),
    processing: row?.processing ?? false,
    processingDate: formatDateTime(row?.processingDate),
    error: row?.error ?? false,
    active: row?.active ?? false,
    online: row?.online ?? false,
    startDate: formatDateTime(row?.startDate),
    closeDate: formatDateTime(row?.closeDate),
    remoteAdId: row?.remoteAdId ?? 0,
    errorReason: row?.errorReason ?? null,
    queueItemId: row?.queueItemId ?? null,
  };
  // The website is the platform's own portal: no client or queue result of a marketplace.
  return portal === "website"
    ? status
    : { ...status, clientResult: row?.clientResult ?? false, queueResult: row?.queueResult ?? false };
}

type FeatureRow = typeof adFeatures.$inferSelect;

export const featureStatus = (row: FeatureRow) => ({
  feature: row.feature,
  pending: row.pending,
  pendingDate: formatDateTime(row.pendingDate),
  error: row.error,
  active: row.active,
  startDate: formatDateTime(row.startDate),
});

/** The spec's `portals` list: per portal the publish status and its features (`false` when none; website has none). */
export function portalStatuses(publications: PublicationRow[], features: FeatureRow[]) {
  return PUBLISH_TARGETS.map((portal) => {
    const own = features.filter((f) => f.portal === portal);
    return {
      portal,
      publish: publishStatus(
        portal,
        publications.find((p) => p.portal === portal),
      ),
      features: own.length > 0 ? own.map(featureStatus) : (false as const),
    };
  });
}

/** Statuses of the user's given ads; with `force` the marketplaces are asked for the live state first. */
export async function adStatuses(
  ctx: ServiceContext,
  input: { userId: number; adIds: number[]; force: boolean; page: number; itemsPerPage: number },
): Promise<Page<{ adId: number; portals: ReturnType<typeof portalStatuses> }>> {
  const { db, env, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const owned = await db
    .select({ id: ads.id })
    .from(ads)
    .where(and(eq(ads.userId, input.userId), inList(ads.id, input.adIds)))
    .orderBy(ads.id);
  const ids = owned.map((r) => r.id).slice((input.page - 1) * input.itemsPerPage, input.page * input.itemsPerPage);
  if (input.force) await refreshFromPortals(db, env, input.userId, ids);
  const { publications, features } = await namedBatch(db, {
    publications: db.select().from(adPublications).where(inList(adPublications.adId, ids)),
    features: db.select().from(adFeatures).where(inList(adFeatures.adId, ids)),
  });
  return {
    items: ids.map((adId) => ({
      adId,
      portals: portalStatuses(
        publications.filter((p) => p.adId === adId),
        features.filter((f) => f.adId === adId),
      ),
    })),
    totalItems: owned.length,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
}

/** `force`: the live state of each listing (online, close date) from its marketplace. */
async function refreshFromPortals(db: Db, env: ShardEnv, userId: number, adIds: number[]) {
  const live = await db
    .select()
    .from(adPublications)
    .where(and(inList(adPublications.adId, adIds), eq(adPublications.active, true)));
  for (const publication of live) {
    if (publication.portal === "website" || !publication.remoteAdId) continue;
    const state = await withAccessToken(
      { db, env },
      { userId, portal: publication.portal as Marketplace },
      (gateway, token) => gateway.getListing(token, publication.remoteAdId),
    ).catch(() => null);
    if (!state) continue;
    await db
      .update(adPublications)
      .set({
        online: state.online,
        ...(state.closeDate ? { closeDate: state.closeDate } : {}),
        processingDate: nowIso(),
      })
      .where(and(eq(adPublications.adId, publication.adId), eq(adPublications.portal, publication.portal)));
  }
}

/** GET /status/totals/<userId>/: the number of the user's ads per ad status. */
export async function statusTotals(ctx: ServiceContext, userId: number) {
  const { db, caller } = ctx;
  await requireUser(db, caller, userId);
  const rows = await db
    .select({ status: ads.status, n: count() })
    .from(ads)
    .where(eq(ads.userId, userId))
    .groupBy(ads.status);
  const totals = { active: 0, concept: 0, archive: 0 };
  for (const row of rows) totals[row.status] = row.n;
  return { userId, ...totals, total: totals.active + totals.concept + totals.archive };
}
