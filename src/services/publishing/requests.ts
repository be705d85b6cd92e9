import { type AnyColumn, and, eq, lte, ne, sql } from "drizzle-orm";
import { batchAll, type Db, namedBatch, namedBatches } from "../../db/client";
import { byTurns } from "../../db/fairShare";
import { inIds, inList } from "../../db/inList";
import {
  adAttributes,
  adFeatures,
  adPublications,
  adSettings,
  ads,
  adUpdateRequests,
  portalConnections,
  queueItems,
  userSettings,
  users,
} from "../../db/schema";
import type { Env } from "../../env";
import { DomainError, type ErrorCode } from "../../lib/errors";
import { metricsOf } from "../../lib/metrics";
import { nowIso } from "../../lib/time";
import type { Marketplace, PublishTarget } from "../../lib/vocabulary";
import { PUBLISH_TARGETS } from "../../lib/vocabulary";
import type { AdRow } from "../ads/access";
import { checkAttributes } from "../ads/attributes";
import { type Catalogue, GPSR_KEYS, hasGpsrAttributes, loadCatalogue } from "../catalogue/catalogue";
import { type FeatureName, featurePrice, placingPrice } from "../catalogue/features";
import { isInternal, requireUser, type UserRow, userNotFound, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { payerIdOf } from "../wallet/wallet";
import { connectionQuery } from "./connections";
import { type Intent, type QueuedIntent, queueIntents } from "./intents";
import { DELETED_BEFORE_START, type ItemKind, noteRefund, type QueueItem, transition } from "./lifecycle";
import { accepted, type Outcome, type PublishMode, REFUSAL_TEXTS, refusal, refused, sellerRefusal } from "./types";

type AttributeRow = typeof adAttributes.$inferSelect;

/** Rows per ad, in the order read. */
function groupByAd<T extends { adId: number }>(rows: T[]): Map<number, T[]> {
  const map = new Map<number, T[]>();
  for (const row of rows) {
    const group = map.get(row.adId);
    if (group) group.push(row);
    else map.set(row.adId, [row]);
  }
  return map;
}

/**
 * What keeps an ad from being listed on a marketplace, as the marketplace would say it: the product-safety
 * data portal_a asks of a business seller without a manufacturer, then each attribute of the portal's set
 * that is missing or no longer valid. Checked before anything is queued or charged.
 */
function listingProblems(
  catalogue: Catalogue,
  user: UserRow,
  ad: AdRow,
  portal: Marketplace,
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

/**
 * The outcome of an intent once queued: its item; or the refusal of a payer who cannot pay; or, when the
 * listing was not (or no longer) in the state the intent needs by the time it was written, the refusal
 * a fresh call would get then.
 */
function queuedOutcome(portal: string, adId: number, action: ItemKind, queued: QueuedIntent): Outcome {
  if (queued.itemId !== undefined) return accepted(adId, queued.itemId);
  if (queued.refused === "insufficient_means")
    return refused("insufficient_means", portal, adId, REFUSAL_TEXTS.insufficient_means, {
      price: queued.price,
      balance: queued.balance,
    });
  if (action === "publish") return refused("job_not_retryable", portal, adId, REFUSAL_TEXTS.job_not_retryable);
  return refused("ad_not_published", portal, adId, REFUSAL_TEXTS.ad_not_published);
}

/** A retry (POST /jobs/<id>/retry): the failed job it repeats and the marketplace reference it keeps. */
export interface RetryOf {
  retryOf: number;
  externalRef?: string;
}

/** batchall with portal `meta`: every ad of the user on every portal in turn, for internal clients only. */
export async function requestPublishingEverywhere(
  ctx: ServiceContext,
  input: { userId: number; images: boolean; mode: "publish" | "unpublish" },
): Promise<Outcome[]> {
  if (!isInternal(ctx.caller)) throw DomainError.of("internal_only", "portal: meta is for internal clients only");
  const outcomes: Outcome[] = [];
  for (const portal of PUBLISH_TARGETS)
    outcomes.push(
      ...(await requestPublishing(ctx, { ...input, portal, adIds: input.mode === "publish" ? "allActive" : "all" })),
    );
  return outcomes;
}

/**
 * POST/PUT/DELETE /publish/ and the batch forms. Every ad gets an outcome; what can go is queued
 * exactly once (see `queueIntents`) and, for a placement, paid for when it is queued. Whether a
 * publish places or updates is decided in the transaction that queues it. Unpublishing an ad whose
 * placement or update has not started cancels that item and refunds it; one already claimed by the
 * consumer runs to its end, and the unpublish queued behind it runs after it. A retry runs the same
 * checks as a fresh call.
 */
export async function requestPublishing(
  ctx: ServiceContext,
  input: {
    userId: number;
    adIds: number[] | "all" | "allActive";
    portal: PublishTarget;
    images: boolean;
    mode: PublishMode;
    /** Set when this call retries a failed job (POST /jobs/<id>/retry). */
    retry?: RetryOf | undefined;
  },
): Promise<Outcome[]> {
  const { db, env } = ctx;
  const { portal, mode, retry } = input;
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
  const { userRows, settingRows, adRows, publications, pendingItems, connections, attributeRows } = await namedBatch(
    db,
    {
      userRows: db
        .select()
        .from(users)
        .where(and(eq(users.id, input.userId), visibleUsers(ctx.caller))),
      settingRows: db
        .select({ status: userSettings.status, walletUserId: userSettings.walletUserId })
        .from(userSettings)
        .where(eq(userSettings.userId, input.userId)),
      adRows: db.select().from(ads).where(ownAds),
      publications: db
        .select()
        .from(adPublications)
        .where(and(adIdsIn(adPublications.adId), eq(adPublications.portal, portal))),
      pendingItems: db
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
      connections: // (The website needs no connection; its query finds none.)
        connectionQuery(db, input.userId, portal as Marketplace),
      attributeRows: db
        .select()
        .from(adAttributes)
        .where(
          and(
            adIdsIn(adAttributes.adId),
            sql`${adAttributes.portal} = ${portal}`,
            sql`${checksAttributes ? 1 : 0} = 1`,
          ),
        )
        .orderBy(adAttributes.adId, adAttributes.seq),
    },
  );
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
  const now = nowIso();
  // Not started yet: taken out of the queue and its charge given back (what the consumer claimed meanwhile stays).
  const withdrawn =
    mode === "unpublish"
      ? await withdrawPending(
          ctx,
          pendingItems.filter((item) => item.action !== "unpublish"),
          now,
        )
      : new Map<number, number>();

  for (const adId of adIds) {
    const ad = byId.get(adId);
    if (!ad) {
      outcomes.push(refused("ad_not_found", portal, adId, REFUSAL_TEXTS.ad_not_found));
      continue;
    }
    const isPublished = published.get(adId)?.active ?? false;
    const base = { adId, userId: user.id, portal, payerId, cost: 0, description: "", images: false, ...retry };
    if (mode === "unpublish") {
      // A placement that never happened needs nothing more; a listing that is live still goes down.
      const cancelled = withdrawn.get(adId);
      if (!isPublished && cancelled) outcomes.push(accepted(adId, cancelled));
      else if (!isPublished) outcomes.push(refused("ad_not_published", portal, adId, REFUSAL_TEXTS.ad_not_published));
      else if (!connected)
        outcomes.push(refused("portal_not_connected", portal, adId, REFUSAL_TEXTS.portal_not_connected));
      else outcomes.push({ ...base, action: "unpublish" });
      continue;
    }
    const refusedSeller = sellerRefusal({
      locked: settings?.status === "locked",
      connected,
      archived: ad.status === "archive",
    });
    if (refusedSeller) {
      outcomes.push(refused(refusedSeller.code, portal, adId, refusedSeller.reason));
      continue;
    }
    if (mode === "update" && !isPublished) {
      outcomes.push(refused("ad_not_published", portal, adId, REFUSAL_TEXTS.ad_not_published));
      continue;
    }
    const problems =
      portal === "website" ? [] : listingProblems(catalogue, user, ad, portal, attributesByAd.get(adId) ?? []);
    if (problems.length > 0) {
      outcomes.push(refused("listing_incomplete", portal, adId, problems));
      continue;
    }
    outcomes.push(
      mode === "update"
        ? { ...base, action: "update", images: input.images }
        : {
            ...base,
            action: "publish",
            // Publishing a live ad updates it, free of charge (a retried placement stays a placement).
            updateIfLive: !retry,
            images: input.images,
            cost: placingPrice(catalogue, ad.categoryId, portal),
            description: `plaatsen ${portal} adId ${adId}`,
          },
    );
  }

  const intents = outcomes.filter((o): o is Intent => "action" in o);
  const queued = await queueIntents(db, env, intents, ctx.requestId);
  const byIntent = new Map(intents.map((intent, i) => [intent, queued[i]]));
  return outcomes.map((o) => {
    if (!("action" in o)) return o;
    const q = byIntent.get(o);
    return q
      ? queuedOutcome(portal, o.adId, o.action, q)
      : refused("insufficient_means", portal, o.adId, REFUSAL_TEXTS.insufficient_means);
  });
}

/**
 * Cancels pending items (a client's DELETE before the job started) and refunds them, in one batch; an
 * item the consumer claimed meanwhile, or had started before (pending again after a crash or a transient
 * failure, so maybe already at the marketplace), does not move. Answers, per ad, an item that was cancelled.
 */
async function withdrawPending(
  ctx: ServiceContext,
  items: QueueItem[],
  now: string,
  reason = "removed before processing",
): Promise<Map<number, number>> {
  const moved = await namedBatches(
    ctx.db,
    items.map((item) => transition(ctx.db, item, "cancelled", { now, reason })),
  );
  const cancelled = new Map<number, number>();
  moved.forEach(({ item: [row] }) => {
    if (!row) return;
    noteRefund(metricsOf(ctx.env), "cancelled", row);
    if (!cancelled.has(row.adId)) cancelled.set(row.adId, row.id);
  });
  return cancelled;
}

/**
 * The jobs of deleted ads, or of a deleted user, that never started: cancelled and refunded. An unpublish
 * asked for before the delete, and a job that started (it may be at the marketplace), run or settle to
 * their end (see `runPublishJobs`); a job that never started but was claimed meanwhile ends unpaid there.
 */
export async function withdrawUnstartedJobs(
  ctx: ServiceContext,
  input: { adIds: number[] } | { userId: number },
): Promise<void> {
  const items = await ctx.db
    .select()
    .from(queueItems)
    .where(
      and(
        "adIds" in input ? inList(queueItems.adId, input.adIds) : eq(queueItems.userId, input.userId),
        eq(queueItems.status, "pending"),
        eq(queueItems.attempts, 0),
        ne(queueItems.action, "unpublish"),
      ),
    );
  await withdrawPending(ctx, items, nowIso(), DELETED_BEFORE_START);
}

/** POST /features/: a feature for an ad published on the portal, paid when queued. */
export async function requestFeature(
  ctx: ServiceContext,
  input: { adId: number; portal: Marketplace; feature: FeatureName; retry?: RetryOf | undefined },
): Promise<Outcome> {
  const { db } = ctx;
  const notFound = () =>
    new DomainError({
      code: "ad_not_found",
      field: "adId",
      message: refusal(input.portal, input.adId, REFUSAL_TEXTS.ad_not_found),
    });
  const ad = await db.select().from(ads).where(eq(ads.id, input.adId)).get();
  if (!ad) throw notFound();
  await requireUser(db, ctx.caller, ad.userId).catch(() => {
    throw notFound();
  });
  const { outcome } = await queueFeature(db, ctx.env, ad, input.portal, input.feature, ctx.requestId, input.retry);
  return outcome;
}

/**
 * Queues a paid feature for an ad (the features endpoint, scheduled tasks and retries share it) after
 * the checks of a fresh call: the user not locked, the ad not archived and live on the portal, the
 * feature sold there; answers what it cost.
 */
export async function queueFeature(
  db: Db,
  env: Env,
  ad: AdRow,
  portal: Marketplace,
  feature: FeatureName,
  requestId?: string,
  retry?: RetryOf,
): Promise<{ outcome: Outcome; cost: number }> {
  const {
    publication: [publication],
    settings: [settings],
    connection: [connection],
  } = await namedBatch(db, {
    publication: db
      .select()
      .from(adPublications)
      .where(and(eq(adPublications.adId, ad.id), eq(adPublications.portal, portal))),
    settings: db
      .select({ status: userSettings.status, walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, ad.userId)),
    connection: connectionQuery(db, ad.userId, portal),
  });
  const refuse = (code: ErrorCode, reason: string) => ({ outcome: refused(code, portal, ad.id, reason), cost: 0 });
  const refusedSeller = sellerRefusal({
    locked: settings?.status === "locked",
    connected: connection?.status ?? false,
    archived: ad.status === "archive",
  });
  if (refusedSeller) return refuse(refusedSeller.code, refusedSeller.reason);
  if (!publication?.active) return refuse("ad_not_published", REFUSAL_TEXTS.ad_not_published);
  const price = featurePrice(await loadCatalogue(db), ad.categoryId, portal, feature);
  if (!price) return refuse("feature_not_available", REFUSAL_TEXTS.feature_not_available);
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
        payerId: payerIdOf(ad.userId, settings?.walletUserId),
        description: `${feature} ${portal} adId ${ad.id}`,
        ...retry,
      },
    ],
    requestId,
  );
  if (!queued) return refuse("insufficient_means", REFUSAL_TEXTS.insufficient_means);
  return { outcome: queuedOutcome(portal, ad.id, "feature", queued), cost: queued.created ? queued.cost : 0 };
}

/**
 * The outbox of updates asked for by image changes and manufacturer batches (ad_update_requests):
 * each (ad, portal) still active there gets one queued update; the requests are then removed. At most
 * `limit` a run, taken by turns of client.
 */
export async function flushUpdateRequests(db: Db, env: Env, limit = 100, requestId?: string): Promise<number> {
  const requests = (
    await db
      .select({ request: adUpdateRequests })
      .from(adUpdateRequests)
      .innerJoin(ads, eq(ads.id, adUpdateRequests.adId))
      .innerJoin(users, eq(users.id, ads.userId))
      .orderBy(...byTurns(users.clientId, adUpdateRequests.id))
      .limit(limit)
  ).map((row) => row.request);
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
 * new listing, paid like a first placement, after the checks a fresh placement makes (`sellerRefusal`,
 * then funds): a locked seller, an archived ad or a lost connection is not charged, and its listing
 * simply ends. A listing with a job still open waits for it. At most `limit` per call; the rest follow
 * next minute.
 */
export async function replaceExpiredListings(db: Db, env: Env, now: Date, requestId?: string, limit = 50) {
  const expired = await db
    .select({
      adId: adPublications.adId,
      portal: adPublications.portal,
      userId: ads.userId,
      categoryId: ads.categoryId,
      adStatus: ads.status,
      sellerStatus: userSettings.status,
      walletUserId: userSettings.walletUserId,
      connected: portalConnections.status,
    })
    .from(adPublications)
    .innerJoin(
      adSettings,
      and(eq(adSettings.adId, adPublications.adId), sql`${adSettings.portal} = ${adPublications.portal}`),
    )
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .leftJoin(userSettings, eq(userSettings.userId, ads.userId))
    .leftJoin(
      portalConnections,
      and(eq(portalConnections.userId, ads.userId), sql`${portalConnections.portal} = ${adPublications.portal}`),
    )
    .where(
      and(
        eq(adSettings.autoreplace, true),
        eq(adPublications.active, true),
        eq(adPublications.pending, false),
        lte(adPublications.closeDate, now.toISOString()),
        // Nor while a feature of the listing is open: it may be bought already, and is settled first.
        sql`NOT EXISTS (SELECT 1 FROM ${queueItems} f WHERE f.ad_id = ${adPublications.adId} AND f.portal = ${adPublications.portal}
          AND f.status IN ('pending', 'processing'))`,
      ),
    )
    .limit(limit);
  if (expired.length === 0) return { replaced: 0, refused: 0 };
  const catalogue = await loadCatalogue(db);
  // The old listings have ended, and their features with them: the next placement is a new one.
  await batchAll(
    db,
    expired.flatMap((listing) => [
      db
        .update(adPublications)
        .set({ active: false, online: false, remoteAdId: 0 })
        .where(and(eq(adPublications.adId, listing.adId), eq(adPublications.portal, listing.portal))),
      db
        .update(adFeatures)
        .set({ active: false })
        .where(and(eq(adFeatures.adId, listing.adId), sql`${adFeatures.portal} = ${listing.portal}`)),
    ]),
  );
  const placeable = expired.filter(
    (listing) =>
      !sellerRefusal({
        locked: listing.sellerStatus === "locked",
        connected: listing.portal === "website" || (listing.connected ?? false),
        archived: listing.adStatus === "archive",
      }),
  );
  const intents = placeable.map(
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
  const replaced = queued.filter((q) => q.itemId !== undefined).length;
  return { replaced, refused: expired.length - replaced };
}
