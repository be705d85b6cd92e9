import { z } from "@hono/zod-openapi";
import { id, queryId } from "../../lib/fields";
import { MarketplaceEnum, PublishTargetEnum } from "../../lib/vocabulary";
import { FEATURE_NAMES } from "../catalogue/features";

/** GET /features/?portal=…&adId=…: the features of an ad on a portal. */
export const FeaturesQuery = z.object({ portal: PublishTargetEnum, adId: queryId() });

export const BuyFeature = z
  .object({ adId: id(), portal: MarketplaceEnum, feature: z.enum(FEATURE_NAMES) })
  .openapi("BuyFeature");

/** A feature's response shape. */
export const Feature = z
  .object({
    feature: z.enum(FEATURE_NAMES),
    displayName: z.union([z.string(), z.literal(false)]),
    available: z.boolean(),
    active: z.boolean(),
    price: z.union([z.number().int(), z.literal(false)]).openapi({ description: "Service price in cents" }),
    priceAdditional: z.number().int().openapi({ description: "Portal price in cents" }),
  })
  .openapi("Feature");
