import { and, eq, inArray, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { inList } from "../db/inList";
import {
  adAttributes,
  adFeatures,
  adPublications,
  adSettings,
  ads,
  adUpdateRequests,
  queueItems,
  userSettings,
} from "../db/schema";
import type { Env } from "../env";
import type { Job } from "../jobs/types";
import { ApiError } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { MarketplacePortal } from "../portals/gateway";
import { ADS_SCOPE, adWriteScopes } from "./ads";
import type { AdRow } from "./adViews";
import { bumpRevisions } from "./cache";
import { GPSR_KEYS, hasGpsrAttributes, loadCatalogue } from "./catalogue";
import { type FeatureName, featurePrice, placingPrice } from "./features";
import { isConnected } from "./portalConnections";
import { requireUser, type Scope, type UserRow } from "./scope";
import { noteBudgetCrossing, payerOf, refundQueueItem } from "./wallet";

export type PublishPortal = MarketplacePortal | "website";
export type PublishMode = "publish" | "update" | "unpublish";

export interface Outcome {
  adId: number;
  result: boolean;
  errors: string[];
}

/** The spec's text form of a refusal. */
export const refusal = (portal: string, adId: number, reason: string) =>
  `portal: ${portal} - adId: ${adId} - ${reason}`;

const ok = (adId: number): Outcome => ({ adId, result: true, errors: [] });
const refused = (portal: string, adId: number, reason: string): Outcome => ({
  adId,
  result: false,
  errors: [refusal(portal, adId, reason)],
});

type ItemInput = {
  adId: number;
  userId: number;
  portal: PublishPortal;
  action: "publish" | "update" | "unpublish" | "feature";
  feature?: string;
  images: boolean;
};

/**
 * Records a queue item and, when it costs something, its charge in one transaction. The charge is
 * written only if the payer's balance covers it; otherwise the item is cancelled and nothing is queued.
 */
async function recordItem(
  env: Env,
  db: Db,
  item: ItemInput,
  charge: { payerId: number; amount: number; description: string } | null,
) {
  const statements = [
    env.DB.prepare(
      "INSERT INTO queue_items (ad_id, user_id, portal, action, feature, images) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    ).bind(item.adId, item.userId, item.portal, item.action, item.feature ?? null, item.images ? 1 : 0),
  ];
  if (charge && charge.amount > 0) {
    statements.push(
      env.DB.prepare(
        `INSERT INTO wallet_entries (user_id, amount, kind, description, ad_id, portal, queue_item_id)
         SELECT ?1, ?2, 'charge', ?3, ?4, ?5, last_insert_rowid()
         WHERE (SELECT coalesce(sum(amount), 0) FROM wallet_entries WHERE user_id = ?1) >= -?2`,
      ).bind(charge.payerId, -charge.amount, charge.description, item.adId, item.portal),
    );
  }
  const [inserted, charged] = await env.DB.batch<{ id: number }>(statements);
  const id = inserted?.results[0]?.id as number;
  if (charged && charged.meta.changes === 0) {
    await db.update(queueItems).set({ status: "cancelled", reason: "insufficient means" }).where(eq(queueItems.id, id));
    return null;
  }
  if (charged && charge) await noteBudgetCrossing(db, charge.payerId, charge.amount);
  const now = nowIso();
  if (item.action === "feature") {
    await db
      .insert(adFeatures)
      .values({
        adId: item.adId,
        portal: item.portal as MarketplacePortal,
        feature: item.feature as string,
        pending: true,
        pendingDate: now,
      })
      .onConflictDoUpdate({
        target: [adFeatures.adId, adFeatures.portal, adFeatures.feature],
        set: { pending: true, pendingDate: now, error: false },
      });
  } else {
    await db
      .insert(adPublications)
      .values({ adId: item.adId, portal: item.portal, pending: true, pendingDate: now, queueResult: true })
      .onConflictDoUpdate({
        target: [adPublications.adId, adPublications.portal],
        set: { pending: true, pendingDate: now, error: false, errorReason: null, queueResult: true },
      });
  }
  await db.batch([bumpRevisions(db, adWriteScopes(item.userId))]);
  return id;
}

async function sendJobs(env: Env, db: Db, itemIds: number[]): Promise<void> {
  for (let i = 0; i < itemIds.length; i += 100) {
    const chunk = itemIds.slice(i, i + 100);
    try {
      await env.JOBS.sendBatch(chunk.map((itemId) => ({ body: { kind: "publish", itemId } satisfies Job })));
    } catch (error) {
      for (const id of chunk) await failItem(db, id, "could not be queued");
      throw error;
    }
  }
}

/** Marks an item failed, with its publication or feature, and gives back its charge. */
export async function failItem(db: Db, itemId: number, reason: string): Promise<void> {
  const item = await db.select().from(queueItems).where(eq(queueItems.id, itemId)).get();
  if (!item || item.status === "done" || item.status === "cancelled") return;
  await db.batch([
    db.update(queueItems).set({ status: "error", reason, updatedAt: nowIso() }).where(eq(queueItems.id, itemId)),
    item.action === "feature"
      ? db
          .update(adFeatures)
          .set({ pending: false, error: true })
          .where(
            and(
              eq(adFeatures.adId, item.adId),
              eq(adFeatures.portal, item.portal as MarketplacePortal),
              eq(adFeatures.feature, item.feature ?? ""),
            ),
          )
      : db
          .update(adPublications)
          .set({ pending: false, processing: false, error: true, errorReason: reason, clientResult: false })
          .where(and(eq(adPublications.adId, item.adId), eq(adPublications.portal, item.portal))),
    bumpRevisions(db, [ADS_SCOPE]),
  ]);
  await refundQueueItem(db, itemId, reason);
}

/** Whether the ad answers the product-safety rule of portal_a for a business seller. */
async function meetsGpsr(db: Db, user: UserRow, ad: AdRow): Promise<boolean> {
  if (!user.companyName || ad.manufacturerId !== null) return true;
  const catalogue = await loadCatalogue(db);
  if (ad.categoryId === null || !hasGpsrAttributes(catalogue, ad.categoryId)) return true;
  const keys = await db
    .select({ key: adAttributes.key })
    .from(adAttributes)
    .where(
      and(eq(adAttributes.adId, ad.id), eq(adAttributes.portal, "portal_a"), inArray(adAttributes.key, [...GPSR_KEYS])),
    );
  return GPSR_KEYS.every((k) => keys.some((row) => row.key === k));
}

/**
 * POST/PUT/DELETE /publish/ and the batch forms. Every ad gets an outcome; what can go is queued (a
 * queue item row plus a message) and, for a first publication, paid for when it is queued.
 */
export async function requestPublishing(
  db: Db,
  env: Env,
  scope: Scope,
  input: {
    userId: number;
    adIds: number[] | "all" | "allActive";
    portal: PublishPortal;
    images: boolean;
    mode: PublishMode;
  },
): Promise<Outcome[]> {
  const user = await requireUser(db, scope, input.userId);
  const { portal, mode } = input;
  const adRows = await db
    .select()
    .from(ads)
    .where(
      and(
        eq(ads.userId, user.id),
        Array.isArray(input.adIds)
          ? inList(ads.id, input.adIds)
          : input.adIds === "allActive"
            ? eq(ads.status, "active")
            : undefined,
      ),
    );
  const byId = new Map(adRows.map((ad) => [ad.id, ad]));
  const adIds = Array.isArray(input.adIds) ? [...new Set(input.adIds)] : adRows.map((ad) => ad.id);
  const [settings, publications, pendingItems, connected, catalogue, payerId] = await Promise.all([
    db.select({ status: userSettings.status }).from(userSettings).where(eq(userSettings.userId, user.id)).get(),
    db
      .select()
      .from(adPublications)
      .where(and(inList(adPublications.adId, adIds), eq(adPublications.portal, portal))),
    db
      .select()
      .from(queueItems)
      .where(and(inList(queueItems.adId, adIds), eq(queueItems.portal, portal), eq(queueItems.status, "pending"))),
    portal === "website" ? Promise.resolve(true) : isConnected(db, user.id, portal),
    loadCatalogue(db),
    payerOf(db, user.id),
  ]);
  const published = new Map(publications.map((p) => [p.adId, p]));
  const outcomes: Outcome[] = [];
  const queued: number[] = [];

  for (const adId of adIds) {
    const ad = byId.get(adId);
    if (!ad) {
      outcomes.push(refused(portal, adId, "advertisement not found"));
      continue;
    }
    const isPublished = published.get(adId)?.active ?? false;
    if (mode === "unpublish") {
      const pending = pendingItems.find((item) => item.adId === adId && item.action !== "unpublish");
      if (pending) {
        // Not processed yet: the item is taken out of the queue, and its charge given back.
        await db
          .update(queueItems)
          .set({ status: "cancelled", reason: "removed before processing" })
          .where(eq(queueItems.id, pending.id));
        await refundQueueItem(db, pending.id, "removed before processing");
        await db
          .update(adPublications)
          .set({ pending: false })
          .where(and(eq(adPublications.adId, adId), eq(adPublications.portal, portal)));
        // A first publication that never happened needs nothing more; a listing that is live still goes down.
        if (!isPublished) {
          outcomes.push(ok(adId));
          continue;
        }
      }
      if (!isPublished) {
        outcomes.push(refused(portal, adId, "this advertisement is not published"));
        continue;
      }
      if (!connected) {
        outcomes.push(refused(portal, adId, "user is not connected to the portal"));
        continue;
      }
      const id = await recordItem(env, db, { adId, userId: user.id, portal, action: "unpublish", images: false }, null);
      if (id) queued.push(id);
      outcomes.push(ok(adId));
      continue;
    }
    if (settings?.status === "locked") {
      outcomes.push(refused(portal, adId, "user is locked"));
      continue;
    }
    if (!connected) {
      outcomes.push(refused(portal, adId, "user is not connected to the portal"));
      continue;
    }
    if (ad.status === "archive") {
      outcomes.push(refused(portal, adId, "advertisement is archived"));
      continue;
    }
    if (mode === "update" && !isPublished) {
      outcomes.push(refused(portal, adId, "this advertisement is not published"));
      continue;
    }
    if (portal === "portal_a" && !(await meetsGpsr(db, user, ad))) {
      outcomes.push(
        refused(
          portal,
          adId,
          "manufacturer data is missing (manufacturerTradename, manufacturerAddress, manufacturerEmail)",
        ),
      );
      continue;
    }
    // Publishing a published ad updates it, free of charge.
    const action = isPublished ? "update" : "publish";
    const price = action === "publish" ? placingPrice(catalogue, ad.categoryId, portal) : 0;
    const id = await recordItem(
      env,
      db,
      { adId, userId: user.id, portal, action, images: input.images },
      { payerId, amount: price, description: `plaatsen ${portal} adId ${adId}` },
    );
    if (id === null) {
      outcomes.push(refused(portal, adId, "insufficient means"));
      continue;
    }
    queued.push(id);
    outcomes.push(ok(adId));
  }
  await sendJobs(env, db, queued);
  return outcomes;
}

/** POST /features/: a feature for an ad published on the portal, paid when queued. */
export async function requestFeature(
  db: Db,
  env: Env,
  scope: Scope,
  input: { adId: number; portal: MarketplacePortal; feature: FeatureName },
): Promise<Outcome> {
  const ad = await db.select().from(ads).where(eq(ads.id, input.adId)).get();
  if (!ad) throw new ApiError(404, [refusal(input.portal, input.adId, "advertisement not found")]);
  await requireUser(db, scope, ad.userId).catch(() => {
    throw new ApiError(404, [refusal(input.portal, input.adId, "advertisement not found")]);
  });
  const { outcome } = await queueFeature(db, env, ad, input.portal, input.feature);
  return outcome;
}

/** Queues a paid feature for an ad (the features endpoint and scheduled tasks share it); answers what it cost. */
export async function queueFeature(
  db: Db,
  env: Env,
  ad: AdRow,
  portal: MarketplacePortal,
  feature: FeatureName,
): Promise<{ outcome: Outcome; cost: number }> {
  const publication = await db
    .select()
    .from(adPublications)
    .where(and(eq(adPublications.adId, ad.id), eq(adPublications.portal, portal)))
    .get();
  if (!publication?.active) return { outcome: refused(portal, ad.id, "this advertisement is not published"), cost: 0 };
  const price = featurePrice(await loadCatalogue(db), ad.categoryId, portal, feature);
  if (!price) return { outcome: refused(portal, ad.id, "feature not available"), cost: 0 };
  const id = await recordItem(
    env,
    db,
    { adId: ad.id, userId: ad.userId, portal, action: "feature", feature, images: false },
    { payerId: await payerOf(db, ad.userId), amount: price.total, description: `${feature} ${portal} adId ${ad.id}` },
  );
  if (id === null) return { outcome: refused(portal, ad.id, "insufficient means"), cost: 0 };
  await sendJobs(env, db, [id]);
  return { outcome: ok(ad.id), cost: price.total };
}

/**
 * The outbox of updates asked for by image changes and manufacturer batches (ad_update_requests):
 * each (ad, portal) still active there gets one queued update; the requests are then removed.
 */
export async function flushUpdateRequests(db: Db, env: Env, limit = 100): Promise<number> {
  const requests = await db.select().from(adUpdateRequests).orderBy(adUpdateRequests.id).limit(limit);
  if (requests.length === 0) return 0;
  const adIds = [...new Set(requests.map((r) => r.adId))];
  const [active, pending] = await Promise.all([
    db
      .select({ adId: adPublications.adId, portal: adPublications.portal, userId: ads.userId })
      .from(adPublications)
      .innerJoin(ads, eq(ads.id, adPublications.adId))
      .where(and(inList(adPublications.adId, adIds), eq(adPublications.active, true))),
    db
      .select({ adId: queueItems.adId, portal: queueItems.portal })
      .from(queueItems)
      .where(and(inList(queueItems.adId, adIds), eq(queueItems.status, "pending"), eq(queueItems.action, "update"))),
  ]);
  const key = (p: { adId: number; portal: string }) => `${p.adId}:${p.portal}`;
  const wanted = new Set(requests.map(key));
  const alreadyQueued = new Set(pending.map(key));
  const queued: number[] = [];
  for (const publication of active) {
    if (!wanted.has(key(publication)) || alreadyQueued.has(key(publication))) continue;
    const id = await recordItem(env, db, { ...publication, action: "update", images: true }, null);
    if (id) queued.push(id);
  }
  await db.delete(adUpdateRequests).where(
    inList(
      adUpdateRequests.id,
      requests.map((r) => r.id),
    ),
  );
  await sendJobs(env, db, queued);
  return queued.length;
}

/**
 * Autoreplace: a listing whose setting asks for it is placed again once its close date has passed, as a
 * new listing, paid like a first placement. At most `limit` per call; the rest follow next minute.
 */
export async function replaceExpiredListings(db: Db, env: Env, now: Date, limit = 50) {
  const expired = await db
    .select({
      adId: adPublications.adId,
      portal: adPublications.portal,
      userId: ads.userId,
      categoryId: ads.categoryId,
    })
    .from(adPublications)
    .innerJoin(
      adSettings,
      and(eq(adSettings.adId, adPublications.adId), sql`${adSettings.portal} = ${adPublications.portal}`),
    )
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .where(
      and(
        eq(adSettings.autoreplace, true),
        eq(adPublications.active, true),
        eq(adPublications.pending, false),
        eq(ads.status, "active"),
        lte(adPublications.closeDate, now.toISOString()),
      ),
    )
    .limit(limit);
  const catalogue = await loadCatalogue(db);
  const queued: number[] = [];
  let refused = 0;
  for (const listing of expired) {
    // The old listing has ended: the next placement is a new one.
    await db
      .update(adPublications)
      .set({ active: false, online: false, remoteAdId: 0 })
      .where(and(eq(adPublications.adId, listing.adId), eq(adPublications.portal, listing.portal)));
    const id = await recordItem(
      env,
      db,
      { adId: listing.adId, userId: listing.userId, portal: listing.portal, action: "publish", images: true },
      {
        payerId: await payerOf(db, listing.userId),
        amount: placingPrice(catalogue, listing.categoryId, listing.portal),
        description: `autoreplace ${listing.portal} adId ${listing.adId}`,
      },
    );
    if (id) queued.push(id);
    else refused += 1;
  }
  await sendJobs(env, db, queued);
  return { replaced: queued.length, refused };
}

/** Items with no progress for a day are given up: marked failed with the reason and refunded. */
export async function expireStaleItems(db: Db, now: Date, limit = 100): Promise<number> {
  const stale = await db
    .select({ id: queueItems.id })
    .from(queueItems)
    .where(
      and(
        inArray(queueItems.status, ["pending", "processing"]),
        lte(queueItems.updatedAt, new Date(now.getTime() - 86_400_000).toISOString()),
      ),
    )
    .limit(limit);
  for (const item of stale) await failItem(db, item.id, "expired: no progress for 24 hours");
  return stale.length;
}
