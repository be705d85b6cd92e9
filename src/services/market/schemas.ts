import { z } from "@hono/zod-openapi";
import { acrossFields, calendarDate, id, rowId } from "../../lib/fields";
import { prefixedPerMarketplace } from "../../lib/marketplaces";
import { MarketplaceEnum, PublishTargetEnum } from "../../lib/vocabulary";
import { DailyStatistics } from "../events/schemas";

export const BidReference = z
  .object({
    userId: id(),
    portal: PublishTargetEnum,
    bidId: z
      .array(z.union([z.number().int(), z.string().max(100)]))
      .min(1)
      .max(1000),
  })
  .openapi("BidReference");

export const StatisticsRequest = z
  .object({
    adId: z.union([id(), z.array(id()).min(1).max(500)]).transform((v) => (Array.isArray(v) ? v : [v])),
    dateStart: calendarDate(),
    dateEnd: calendarDate().openapi({ description: acrossFields("Not before dateStart") }),
    showDaily: z.boolean().default(true),
    showTotals: z.boolean().default(true),
    portal: MarketplaceEnum.optional(),
  })
  .refine((r) => r.dateStart <= r.dateEnd, { error: "must not be before dateStart", path: ["dateEnd"] })
  .openapi("StatisticsRequest");

/** Bids' and statistics' response shapes. */
export const Bid = z
  .object({
    bidId: rowId().openapi({ description: "The portal's bid id" }),
    adId: rowId(),
    portal: MarketplaceEnum,
    amount: z.number().int(),
    name: z.string(),
    message: z.string(),
    isRead: z.boolean(),
    placed: z.string(),
  })
  .openapi("Bid");

const Totals = z.record(
  z.string(),
  z.object({
    type: z.string(),
    minimum: z.number().int(),
    maximum: z.number().int(),
    total: z.number().int(),
    average: z.number().int(),
  }),
);
/** A portal's part of the response, or false where the request left that portal out. */
const perPortal = (schema: z.ZodType) => z.union([schema, z.literal(false)]);

export const Statistics = z
  .object({
    adId: z.array(z.number().int()),
    dateStart: z.string(),
    dateEnd: z.string(),
    showDaily: z.boolean(),
    showTotals: z.boolean(),
    ...prefixedPerMarketplace("statistics_", () => perPortal(z.array(DailyStatistics))),
    ...prefixedPerMarketplace("totals_", () => perPortal(Totals)),
  })
  .openapi("Statistics");
