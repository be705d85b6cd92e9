import { type AnyColumn, and, eq, lte, sql } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { inIds, inList } from "../../db/inList";
import {
  adAttributes,
  adPublications,
  adSettings,
  ads,
  adUpdateRequests,
  queueItems,
  userSettings,
  users,
} from "../../db/schema";
import type { Env } from "../../env";
import { DomainError } from "../../lib/errors";
import { metricsOf } from "../../lib/metrics";
import { nowIso } from "../../lib/time";
import type { MarketplacePortal } from "../../portals/gateway";
import { checkAttributes } from "../ads/attributes";
import { type AdRow, groupByAd } from "../ads/views";
import { type Catalogue, GPSR_KEYS, hasGpsrAttributes, loadCatalogue } from "../catalogue/catalogue";
import { type FeatureName, featurePrice, placingPrice } from "../catalogue/features";
import { requireUser, type UserRow, userNotFound, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { payerIdOf, payerOf } from "../wallet/wallet";
import { connectionQuery } from "./connections";
import { type Intent, type QueuedIntent, queueIntents } from "./intents";
import { noteRefund, transition } from "./lifecycle";
import { accepted, type Outcome, type PublishMode, type PublishPortal, refusal, refused } from "./types";

type AttributeRow = typeof adAttributes.$inferSelect;

/**
 * What keeps an ad from being listed on a marketplace, as the marketplace would say it: the product-safety
 * data portal_a asks of a business seller without a manufacturer, then each attribute of the portal's set
 * that is missing or no longer valid. Checked before anything is queued or charged.
 */
function listingProblems(
  catalogue: Catalogue,
  user: UserRow,
  ad: AdRow,
  portal: MarketplacePortal,
  rows: AttributeRow[],
): string[] {
  if (ad.categoryId === null) return [];
  if (
    portal === "portal_a" &&
    user.companyName &&
    ad.manufacturerId === null &&
    hasGpsrAttributes(catalogue, ad.categoryId) &&
    !GPSR_KEYS.every((key) => rows.some((row) => row.key === key))
  ) {
    return [`manufacturer data is missing (${GPSR_KEYS.join(", ")})`];
  }
  const set = { portal, locale: "nl_NL", values: rows.map(({ key, value }) => ({ key, value })) };
  return checkAttributes(catalogue, [set], { categoryId: ad.categoryId, mode: "create", gpsrRequired: false }).problems;
}

/** The outcome of an intent once queued: its item, or the refusal of a payer who cannot pay. */
const queuedOutcome = (portal: string, adId: number, queued: QueuedIntent): Outcome =>
  queued ? accepted(adId, queued.itemId) : refused("insufficient_means", portal, adId, "insufficient means");

/**
 * POST/PUT/DELETE /publish/ and the batch forms. Every ad gets an outcome; what can go is queued
 * exactly once (see `queueIntents`) and, for a placement, paid for when it is queued. Unpublishing
 * an ad whose placement or update has not started cancels that item and refunds it.
 */
export async function requestPublishing(
  ctx: ServiceContext,
  input: {
    userId: number;
    adIds: number[] | "all" | "allActive";
    portal: PublishPortal;
    images: boolean;
    mode: PublishMode;
  },
): Promise<Outcome[]> {
  const { db, env } = ctx;
  const { portal, mode } = input;
  // One D1 round trip for everything the checks read: the user (as the caller may see it), its
  // settings, the ads, and their publications, pending items and attributes on the portal. With
  // `all`/`allActive` the ads' ids are a subquery of the same batch.
  const ownAds = and(
    eq(ads.userId, input.userId),
    Array.isArray(input.adIds)
      ? inList(ads.id, input.adIds)
      : input.adIds === "allActive"
        ? eq(ads.status, "active")
        : undefined,
  );
  const adIdsIn = (column: AnyColumn) =>
    inIds(column, Array.isArray(input.adIds) ? input.adIds : db.select({ id: ads.id }).from(ads).where(ownAds));
  const checksAttributes = portal !== "website" && mode !== "unpublish";
  const [userRows, settingRows, adRows, publications, pendingItems, connections, attributeRows] = await db.batch([
    db
      .select()
      .from(users)
      .where(and(eq(users.id, input.userId), visibleUsers(ctx.caller))),
    db
      .select({ status: userSettings.status, walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, input.userId)),
    db.select().from(ads).where(ownAds),
    db
      .select()
      .from(adPublications)
      .where(and(adIdsIn(adPublications.adId), eq(adPublications.portal, portal))),
    db
      .select()
      .from(queueItems)
      .where(
        and(
          adIdsIn(queueItems.adId),
          eq(queueItems.portal, portal),
          eq(queueItems.status, "pending"),
          // Read only for an unpublish (a batch cannot leave a statement out by type).
          sql`${mode === "unpublish" ? 1 : 0} = 1`,
        ),
      ),
    // (The website needs no connection; its query finds none.)
    connectionQuery(db, input.userId, portal as MarketplacePortal),
    db
      .select()
      .from(adAttributes)
      .where(
        and(adIdsIn(adAttributes.adId), sql`${adAttributes.portal} = ${portal}`, sql`${checksAttributes ? 1 : 0} = 1`),
      )
      .orderBy(adAttributes.adId, adAttributes.seq),
  ]);
  const [user] = userRows;
  if (!user) throw userNotFound(input.userId);
  const [settings] = settingRows;
  const payerId = payerIdOf(user.id, settings?.walletUserId);
  const connected = portal === "website" || (connections[0]?.status ?? false);
  const catalogue = await loadCatalogue(db);
  const byId = new Map(adRows.map((ad) => [ad.id, ad]));
  const adIds = Array.isArray(input.adIds) ? [...new Set(input.adIds)] : adRows.map((ad) => ad.id);
  const attributesByAd = groupByAd(attributeRows);
  const published = new Map(publications.map((p) => [p.adId, p]));
  const outcomes: (Outcome | Intent)[] = [];
  const cancellations: typeof pendingItems = [];
  const now = nowIso();

  for (const adId of adIds) {
    const ad = byId.get(adId);
    if (!ad) {
      outcomes.push(refused("ad_not_found", portal, adId, "advertisement not found"));
      continue;
    }
    const isPublished = published.get(adId)?.active ?? false;
    const base = { adId, userId: user.id, portal, payerId, cost: 0, description: "", images: false };
    if (mode === "unpublish") {
      // Not started yet: taken out of the queue and its charge given back.
      const waiting = pendingItems.filter((item) => item.adId === adId && item.action !== "unpublish");
      cancellations.push(...waiting);
      // A placement that never happened needs nothing more; a listing that is live still goes down.
      if (!isPublished && waiting.length > 0) outcomes.push(accepted(adId, waiting[0]?.id));
      else if (!isPublished)
        outcomes.push(refused("ad_not_published", portal, adId, "this advertisement is not published"));
      else if (!connected)
        outcomes.push(refused("portal_not_connected", portal, adId, "user is not connected to the portal"));
      else outcomes.push({ ...base, action: "unpublish" });
      continue;
    }
    if (settings?.status === "locked") {
      outcomes.push(refused("user_locked", portal, adId, "user is locked"));
      continue;
    }
    if (!connected) {
      outcomes.push(refused("portal_not_connected", portal, adId, "user is not connected to the portal"));
      continue;
    }
    if (ad.status === "archive") {
      outcomes.push(refused("ad_archived", portal, adId, "advertisement is archived"));
      continue;
    }
    if (mode === "update" && !isPublished) {
      outcomes.push(refused("ad_not_published", portal, adId, "this advertisement is not published"));
      continue;
    }
    const problems =
      portal === "website" ? [] : listingProblems(catalogue, user, ad, portal, attributesByAd.get(adId) ?? []);
    if (problems.length > 0) {
      outcomes.push(refused("listing_incomplete", portal, adId, problems));
      continue;
    }
    // Publishing a published ad updates it, free of charge.
    const action = isPublished ? "update" : "publish";
    outcomes.push({
      ...base,
      action,
      images: input.images,
      cost: action === "publish" ? placingPrice(catalogue, ad.categoryId, portal) : 0,
      description: `plaatsen ${portal} adId ${adId}`,
    });
  }

  await batchAll(
    db,
    cancellations.flatMap((item) => transition(db, item, "cancelled", { now, reason: "removed before processing" })),
  );
  for (const item of cancellations) noteRefund(metricsOf(env), "cancelled", item);
  const intents = outcomes.filter((o): o is Intent => "action" in o);
  const queued = await queueIntents(db, env, intents, ctx.requestId);
  const byIntent = new Map(intents.map((intent, i) => [intent, queued[i] ?? null]));
  return outcomes.map((o) => ("action" in o ? queuedOutcome(portal, o.adId, byIntent.get(o) ?? null) : o));
}

/** POST /features/: a feature for an ad published on the portal, paid when queued. */
export async function requestFeature(
  ctx: ServiceContext,
  input: { adId: number; portal: MarketplacePortal; feature: FeatureName },
): Promise<Outcome> {
  const { db } = ctx;
  const notFound = () => DomainError.of("ad_not_found", refusal(input.portal, input.adId, "advertisement not found"));
  const ad = await db.select().from(ads).where(eq(ads.id, input.adId)).get();
  if (!ad) throw notFound();
  await requireUser(db, ctx.caller, ad.userId).catch(() => {
    throw notFound();
  });
  const { outcome } = await queueFeature(db, ctx.env, ad, input.portal, input.feature, ctx.requestId);
  return outcome;
}

/** Queues a paid feature for an ad (the features endpoint and scheduled tasks share it); answers what it cost. */
export async function queueFeature(
  db: Db,
  env: Env,
  ad: AdRow,
  portal: MarketplacePortal,
  feature: FeatureName,
  requestId?: string,
): Promise<{ outcome: Outcome; cost: number }> {
  const publication = await db
    .select()
    .from(adPublications)
    .where(and(eq(adPublications.adId, ad.id), eq(adPublications.portal, portal)))
    .get();
  if (!publication?.active)
    return { outcome: refused("ad_not_published", portal, ad.id, "this advertisement is not published"), cost: 0 };
  const price = featurePrice(await loadCatalogue(db), ad.categoryId, portal, feature);
  if (!price) return { outcome: refused("feature_not_available", portal, ad.id, "feature not available"), cost: 0 };
  const [queued] = await queueIntents(
    db,
    env,
    [
      {
        adId: ad.id,
        userId: ad.userId,
        portal,
        action: "feature",
        feature,
        images: false,
        cost: price.total,
        payerId: await payerOf(db, ad.userId),
        description: `${feature} ${portal} adId ${ad.id}`,
      },
    ],
    requestId,
  );
  const outcome = queuedOutcome(portal, ad.id, queued ?? null);
  return { outcome, cost: queued?.created ? price.total : 0 };
}

/**
 * The outbox of updates asked for by image changes and manufacturer batches (ad_update_requests):
 * each (ad, portal) still active there gets one queued update; the requests are then removed.
 */
export async function flushUpdateRequests(db: Db, env: Env, limit = 100, requestId?: string): Promise<number> {
  const requests = await db.select().from(adUpdateRequests).orderBy(adUpdateRequests.id).limit(limit);
  if (requests.length === 0) return 0;
  const adIds = [...new Set(requests.map((r) => r.adId))];
  const active = await db
    .select({ adId: adPublications.adId, portal: adPublications.portal, userId: ads.userId })
    .from(adPublications)
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .where(and(inList(adPublications.adId, adIds), eq(adPublications.active, true)));
  const key = (p: { adId: number; portal: string }) => `${p.adId}:${p.portal}`;
  const wanted = new Set(requests.map(key));
  const intents: Intent[] = active
    .filter((publication) => wanted.has(key(publication)))
    .map((publication) => ({
      ...publication,
      action: "update",
      images: true,
      cost: 0,
      payerId: publication.userId,
      description: "",
    }));
  const queued = await queueIntents(db, env, intents, requestId);
  await db.delete(adUpdateRequests).where(
    inList(
      adUpdateRequests.id,
      requests.map((r) => r.id),
    ),
  );
  return queued.filter((q) => q?.created).length;
}

/**
 * Autoreplace: a listing whose setting asks for it is placed again once its close date has passed, as a
 * new listing, paid like a first placement. At most `limit` per call; the rest follow next minute.
 */
export async function replaceExpiredListings(db: Db, env: Env, now: Date, requestId?: string, limit = 50) {
  const expired = await db
    .select({
      adId: adPublications.adId,
      portal: adPublications.portal,
      userId: ads.userId,
      categoryId: ads.categoryId,
      walletUserId: userSettings.walletUserId,
    })
    .from(adPublications)
    .innerJoin(
      adSettings,
      and(eq(adSettings.adId, adPublications.adId), sql`${adSettings.portal} = ${adPublications.portal}`),
    )
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .leftJoin(userSettings, eq(userSettings.userId, ads.userId))
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
  if (expired.length === 0) return { replaced: 0, refused: 0 };
  const catalogue = await loadCatalogue(db);
  // The old listings have ended: the next placement is a new one.
  await batchAll(
    db,
    expired.map((listing) =>
      db
        .update(adPublications)
        .set({ active: false, online: false, remoteAdId: 0 })
        .where(and(eq(adPublications.adId, listing.adId), eq(adPublications.portal, listing.portal))),
    ),
  );
  const intents = expired.map(
    (listing): Intent => ({
      adId: listing.adId,
      userId: listing.userId,
      portal: listing.portal,
      action: "publish",
      images: true,
      cost: placingPrice(catalogue, listing.categoryId, listing.portal),
      payerId: payerIdOf(listing.userId, listing.walletUserId),
      description: `autoreplace ${listing.portal} adId ${listing.adId}`,
    }),
  );
  const queued = await queueIntents(db, env, intents, requestId);
  const replaced = queued.filter((q) => q !== null).length;
  return { replaced, refused: queued.length - replaced };
}
