import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { adImages, ads, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { type Caller, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { ADS_REVISION, userRevision } from "../shared/revisions";

export type AdRow = typeof ads.$inferSelect;

/** Revision keys an ad write touches: the ad list (which the user list reads too), and the owner's (contact `active`, folder totals). */
export const adWriteRevisions = (userId: number) => [ADS_REVISION, userRevision(userId)];

export const adNotFound = (adId: number) => DomainError.of("ad_not_found", `adId: ad ${adId} not found`);

/** The ads among `adIds` that the caller may act on. */
export async function visibleAds(db: Db, caller: Caller, adIds: number[]): Promise<Map<number, AdRow>> {
  if (adIds.length === 0) return new Map();
  const rows = await db
    .select({ ad: ads })
    .from(ads)
    .innerJoin(users, eq(users.id, ads.userId))
    .where(and(inList(ads.id, adIds), visibleUsers(caller)));
  return new Map(rows.map(({ ad }) => [ad.id, ad]));
}

export async function requireAd(db: Db, caller: Caller, adId: number): Promise<AdRow> {
  const ad = (await visibleAds(db, caller, [adId])).get(adId);
  if (!ad) throw adNotFound(adId);
  return ad;
}

/** The revision key an ad's data moves with (its ETag's): its owner's. Refuses an ad the caller cannot see. */
export const adRevisionKey = async (ctx: ServiceContext, adId: number) =>
  userRevision((await requireAd(ctx.db, ctx.caller, adId)).userId);

/** The spec's price object of an ad (the views and the marketplace listing carry the same). */
export const priceOf = (ad: AdRow) => ({
  model: ad.priceModel,
  price: ad.price,
  minimumBid: ad.minimumBid,
  shippingCosts: ad.shippingCosts,
  retailPrice: ad.retail,
});

/** Every stored object of the given ads' images, to delete once their rows are gone. */
export async function imageObjectsOf(db: Db, adIds: number[]) {
  if (adIds.length === 0) return [];
  return db
    .select({ adId: adImages.adId, originalKey: adImages.originalKey, thumbnailKey: adImages.thumbnailKey })
    .from(adImages)
    .where(inList(adImages.adId, adIds));
}
