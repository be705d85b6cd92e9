import { and, eq } from "drizzle-orm";
import { adFeatures } from "../../db/schema";
import type { Marketplace } from "../../lib/vocabulary";
import { requireAd } from "../ads/access";
import { loadCatalogue } from "../catalogue/catalogue";
import { FEATURE_NAMES, FEATURES, featurePrice } from "../catalogue/features";
import type { ServiceContext } from "../shared/context";

/** GET /features/: what can be bought for an ad on a portal, at what price, and what is active. */
export async function featureOffers(ctx: ServiceContext, input: { adId: number; portal: Marketplace | "website" }) {
  const { db, caller } = ctx;
  const ad = await requireAd(db, caller, input.adId);
  if (input.portal === "website") return [];
  const [catalogue, active] = await Promise.all([
    loadCatalogue(db),
    db
      .select()
      .from(adFeatures)
      .where(and(eq(adFeatures.adId, ad.id), eq(adFeatures.portal, input.portal))),
  ]);
  return FEATURE_NAMES.map((feature) => {
    const price = featurePrice(catalogue, ad.categoryId, input.portal as Marketplace, feature);
    return {
      feature,
      displayName: price ? FEATURES[feature].displayName : (false as const),
      available: price !== null,
      active: active.some((f) => f.feature === feature && f.active),
      price: price ? price.price : (false as const),
      priceAdditional: price?.priceAdditional ?? 0,
    };
  });
}
