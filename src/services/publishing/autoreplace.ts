import { and, eq, lte, sql } from "drizzle-orm";
import { batchAll } from "../../db/client";
import { settledUser } from "../../db/directory";
import {
  adFeatures,
  adPublications,
  adSettings,
  ads,
  portalConnections,
  publishJobs,
  userSettings,
} from "../../db/schema";
import { loadCatalogue } from "../catalogue/catalogue";
import { placingPrice } from "../catalogue/features";
import type { JobContext } from "../shared/context";
import { payerIdOf } from "../wallet/wallet";
import { firstRefusal } from "./decide";
import { type Decision, queueJobs } from "./jobs/queue";

/**
 * Autoreplace: a listing whose setting asks for it is placed again once its close date has passed, as a
 * new listing, paid like a first placement, after the checks a fresh placement makes (`firstRefusal`,
 * then funds): a locked seller, an archived ad or a lost connection is not charged, and its listing
 * simply ends. A listing with a job still open waits for it. At most `limit` per call; the rest follow
 * next minute.
 */
export async function replaceExpiredListings(ctx: JobContext, input: { limit: number }) {
  const { db } = ctx;
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
        settledUser(ads.userId),
        eq(adPublications.active, true),
        eq(adPublications.pending, false),
        lte(adPublications.closeDate, ctx.now.toISOString()),
        // Nor while a feature of the listing is open: it may be bought already, and is settled first.
        sql`NOT EXISTS (SELECT 1 FROM ${publishJobs} f WHERE f.ad_id = ${adPublications.adId} AND f.portal = ${adPublications.portal}
          AND f.status IN ('pending', 'processing'))`,
      ),
    )
    .limit(input.limit);
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
      !firstRefusal(
        {
          locked: listing.sellerStatus === "locked",
          connected: listing.portal === "website" || (listing.connected ?? false),
          archived: listing.adStatus === "archive",
          live: false,
        },
        false,
      ),
  );
  const jobs = placeable.map(
    (listing): Decision => ({
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
  const queued = await queueJobs(ctx, jobs);
  const replaced = queued.filter((q) => q.jobId !== undefined).length;
  return { replaced, refused: expired.length - replaced };
}
