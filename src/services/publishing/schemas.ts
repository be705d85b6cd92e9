import { z } from "@hono/zod-openapi";
import { ErrorDetail } from "../../lib/errors";
import { id, rowId } from "../../lib/fields";
import { MARKETPLACES, PublishTargetEnum } from "../../lib/vocabulary";
import { BatchItemResult } from "../ads/schemas";
import { PREFLIGHT_CONNECTION_STATES, PREFLIGHT_MAX_ADS, PREFLIGHT_OUTCOMES } from "./decide";

const images = z.boolean().default(true).openapi({ description: "Submit the images too (default true)" });

export const PublishAd = z.object({ userId: id(), adId: id(), portal: PublishTargetEnum, images }).openapi("PublishAd");
export const PublishAds = z
  .object({ userId: id(), adId: z.array(id()).min(1).max(1000), portal: PublishTargetEnum, images })
  .openapi("PublishAds");
export const PublishEverywhere = z
  .object({
    userId: id(),
    portal: z.literal("meta").openapi({ description: "meta: every portal the ad can go to" }),
    images,
    adId: z.unknown().optional(),
  })
  .openapi("PublishEverywhere");
export const UpdatePublishedAds = z
  .object({
    userId: id(),
    portal: PublishTargetEnum,
    images,
    adId: z.unknown().optional().openapi({ description: "Ignored" }),
  })
  .openapi("UpdatePublishedAds");

/** An ad's publication on every portal (GET /status/…, POST /status/). */

export const StatusRequest = z
  .object({
    userId: id(),
    adId: z.union([id(), z.array(id()).max(1000)]).transform((v) => (Array.isArray(v) ? v : [v])),
    force: z.boolean().default(false).openapi({ description: "Ask the portals for the live state first (slower)" }),
    page: z.number().int().min(1).default(1),
    itemsPerPage: z.number().int().min(1).max(1000).default(1000),
  })
  .openapi("StatusRequest");

/** The number of a user's ads per ad status. */
export const StatusTotals = z.object({
  userId: rowId(),
  active: z.number().int(),
  concept: z.number().int(),
  archive: z.number().int(),
  total: z.number().int(),
});

/** POST /publish/preflight/: what publishing these ads would do, changing nothing. */
export const PreflightRequest = z
  .object({
    userId: id(),
    adId: z
      .union([id(), z.array(id()).min(1).max(PREFLIGHT_MAX_ADS)])
      .optional()
      .transform((v) => (v === undefined || Array.isArray(v) ? v : [v]))
      .openapi({ description: `At most ${PREFLIGHT_MAX_ADS}; absent: the user's active ads` }),
    portal: z.union([PublishTargetEnum, z.literal("meta")]).openapi({ description: "meta: every target (internal)" }),
    images,
  })
  .openapi("PreflightRequest");

// The dry run's response shapes.

/** The state of a user's connection to a target, as a dry run finds it. */
const ConnectionState = z
  .object({
    state: z.enum(PREFLIGHT_CONNECTION_STATES),
    consentUrl: z.string().optional().openapi({ description: "POST it for the consent page (expired, missing)" }),
  })
  .openapi("PreflightConnection");

export const PreflightVerdict = z
  .object({
    adId: rowId(),
    portal: PublishTargetEnum,
    outcome: z.enum(PREFLIGHT_OUTCOMES),
    price: z.number().int().openapi({ description: "Cents the call would charge" }),
    connection: ConnectionState,
    verifiedByMarketplace: z.boolean(),
    reason: z.string().optional().openapi({ description: "Why unverified" }),
    errors: z.array(z.string()),
    errorDetails: z.array(ErrorDetail),
  })
  .openapi("PreflightVerdict");

const VERDICT_EXAMPLE = {
  portal: MARKETPLACES[0],
  connection: { state: "connected" },
  verifiedByMarketplace: true,
} as const;

export const Preflight = z
  .object({
    wallet: z
      .object({
        payer: z.enum(["visible", "another payer"]).openapi({
          description:
            "`another payer`: the wallet belongs to a user of another client, so its id and balances read 0 and only `charged` is shown",
        }),
        payerId: rowId(),
        balance: z.number().int(),
        charged: z.number().int(),
        balanceAfter: z.number().int(),
      })
      .openapi({ description: "The payer's wallet, in cents" }),
    verdicts: z.array(PreflightVerdict),
  })
  .openapi("Preflight", {
    example: {
      wallet: { payer: "visible", payerId: 1042, balance: 84_500, charged: 295, balanceAfter: 84_205 },
      verdicts: [
        { ...VERDICT_EXAMPLE, adId: 20317, outcome: "placement", price: 295, errors: [], errorDetails: [] },
        {
          ...VERDICT_EXAMPLE,
          adId: 20318,
          outcome: "refused",
          price: 0,
          errors: [`portal: ${MARKETPLACES[0]} - adId: 20318 - price.minimumBid: must not exceed the price`],
          errorDetails: [
            {
              code: "listing_refused",
              field: "price.minimumBid",
              message: `portal: ${MARKETPLACES[0]} - adId: 20318 - price.minimumBid: must not exceed the price`,
            },
          ],
        },
      ],
    },
  });

/** Publications' and batch results' response shapes. */
const MARKETPLACES_ONLY = `${MARKETPLACES.join(" and ")} only`;

const PublishStatus = z
  .object({
    pending: z.boolean(),
    pendingDate: z.string(),
    processing: z.boolean(),
    processingDate: z.string(),
    error: z.boolean(),
    active: z.boolean(),
    online: z.boolean(),
    startDate: z.string(),
    closeDate: z.string(),
    remoteAdId: z.number().int(),
    errorReason: z
      .string()
      .nullable()
      .openapi({ description: "Why the last job failed (the portal's reason or ours); null when it did not" }),
    queueItemId: rowId()
      .nullable()
      .openapi({ description: "The latest job of this publication (GET /jobs/<queueItemId>); null when none" }),
    clientResult: z.boolean().optional().openapi({ description: MARKETPLACES_ONLY }),
    queueResult: z.boolean().optional().openapi({ description: MARKETPLACES_ONLY }),
  })
  .openapi("PublishStatus");

export const PortalStatus = z
  .object({
    portal: PublishTargetEnum,
    publish: PublishStatus,
    features: z.union([z.literal(false), z.array(z.record(z.string(), z.unknown()))]),
  })
  .openapi("PortalStatus");

export const PublishResult = BatchItemResult.extend({
  queueItemId: rowId()
    .optional()
    .openapi({ description: "The job that carries this ad's change (GET /jobs/<queueItemId>); absent when refused" }),
}).openapi("PublishResult");

export const PublishResults = z
  .object({
    result: z.boolean(),
    errors: z.array(z.string()),
    data: z.array(PublishResult),
    errorDetails: z.array(ErrorDetail).openapi({ description: "Every refusal of the batch with its code" }),
  })
  .openapi("PublishResults");

export const AdPublishStatus = z.object({ adId: rowId(), portals: z.array(PortalStatus) }).openapi("AdPublishStatus");
