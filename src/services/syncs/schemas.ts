import { z } from "@hono/zod-openapi";
import { SYNC_OUTCOMES, SYNC_REMOVALS, SYNC_STATES } from "../../db/schema";
import { ErrorDetail } from "../../lib/errors";
import { openEnum, pagingQuery, pathId, queryId, queryInt, rowId } from "../../lib/fields";
import { PublishTargetEnum } from "../../lib/vocabulary";
import { CreateAdFields } from "../ads/schemas";

/** The most items one sync takes (its body is streamed: a stock is never held whole). */
export const SYNC_MAX_ITEMS = 20_000;
/** What a sync may end without `maxEndedPercent`: a fifth of the user's synced ads. */
export const DEFAULT_MAX_ENDED_PERCENT = 20;

const { userId: _userId, ...adFields } = CreateAdFields.shape;

/**
 * One item of a stock: an ad as `POST /ads/` creates it (without `userId`: the sync names the user),
 * keyed by the client's own `externalAdId`, with its images by URL and the targets it should be on.
 */
export const SyncItem = z
  .strictObject({
    ...adFields,
    externalAdId: z
      .number()
      .int()
      .openapi({ description: "The item's key: the ad of the user with this externalAdId is the item's" }),
    images: z
      .array(z.url({ protocol: /^https?$/, error: "must be an http or https URL" }).max(2048))
      .max(24)
      .default([])
      .openapi({ description: "The ad's images, in order; a changed list replaces the ad's images" }),
    targets: z
      .array(PublishTargetEnum)
      .max(3)
      .refine((targets) => new Set(targets).size === targets.length, { error: "must not repeat a target" })
      .openapi({ uniqueItems: true })
      .default([])
      .openapi({ description: "Where the ad should be listed; it is taken off every other target" }),
  })
  .openapi("SyncItem");
export type SyncItem = z.output<typeof SyncItem>;

/** The stock of a JSON body (an NDJSON body sends the items one a line instead). */
export const SyncStock = z
  .strictObject({
    items: z.array(z.unknown()).openapi({ type: "array", items: { $ref: "#/components/schemas/SyncItem" } }),
  })
  .openapi("SyncStock");

/** A sync's options, in the query (the body is the stock, streamed). */
export const SyncOptions = z.object({
  userId: queryId().openapi({ description: "The user whose stock this is" }),
  removal: z
    .enum(SYNC_REMOVALS)
    .optional()
    .default("delete")
    .openapi({ description: "What happens to a synced ad the stock no longer holds, once it is off every target" }),
  maxEndedPercent: queryInt(0, 100).optional().default(DEFAULT_MAX_ENDED_PERCENT).openapi({
    description:
      "The most of the user's synced ads (those with an externalAdId) the sync may end, in percent; more refuses the whole sync (100: no limit)",
  }),
});
export type SyncOptions = z.output<typeof SyncOptions>;

const counts = {
  items: z.number().int().openapi({ description: "Items the stock held" }),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  ended: z.number().int().openapi({ description: "Synced ads the stock no longer held" }),
  refused: z.number().int(),
};

/** A sync as `GET /syncs/<syncId>` shows it. */
export const Sync = z
  .object({
    syncId: rowId(),
    userId: rowId(),
    state: openEnum(SYNC_STATES, "Where the sync stands."),
    phase: z.enum(["items", "ending", "done"]),
    removal: z.enum(SYNC_REMOVALS),
    maxEndedPercent: z.number().int(),
    ...counts,
    applied: z.number().int().openapi({ description: "Items applied so far, in stock order" }),
    charged: z.number().int().openapi({ description: "Cents charged for the placements queued" }),
    reason: z.string().nullable().openapi({ description: "Why the sync was refused or failed" }),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi("Sync");
export type SyncView = z.infer<typeof Sync>;

/** What one target does for an item. */
export const SyncTargetResult = z
  .object({
    portal: PublishTargetEnum,
    action: z.enum(["place", "update", "remove"]),
    jobId: rowId().nullable().openapi({ description: "The job: GET /jobs/<jobId>" }),
    refusal: z.union([ErrorDetail, z.null()]),
  })
  .openapi("SyncTargetResult");

export type SyncTargetResult = z.infer<typeof SyncTargetResult>;

/** One item of a sync's report. */
export const SyncItemReport = z
  .object({
    seq: z.number().int().openapi({ description: "The item's place in the stock, from 1; ended ads follow the stock" }),
    externalAdId: z.number().int().nullable(),
    outcome: openEnum(SYNC_OUTCOMES, "What became of the item; null until it is applied.").nullable(),
    adId: rowId().nullable(),
    targets: z.array(SyncTargetResult),
    errorDetails: z.array(ErrorDetail).openapi({ description: "Why the item was refused, each naming its field" }),
  })
  .openapi("SyncItemReport");
export type SyncItemReport = z.infer<typeof SyncItemReport>;

export const SyncItemsQuery = pagingQuery(1000, 100).extend({
  outcome: z.enum(SYNC_OUTCOMES).optional(),
});
export const SyncsQuery = pagingQuery(100).extend({ userId: queryId() });

/** What a target would do and cost for a dry run. */
const TargetPlan = z.object({
  place: z.number().int(),
  update: z.number().int(),
  remove: z.number().int(),
  cost: z.number().int().openapi({ description: "Cents: the placements' prices" }),
});

/** A dry run's answer: the plan of the sync, priced per target, with each refused item. */
export const SyncPlan = z
  .object({
    userId: rowId(),
    ...counts,
    targets: z.object({ portal_a: TargetPlan, portal_b: TargetPlan, website: TargetPlan }),
    cost: z.number().int().openapi({ description: "Cents the sync would charge" }),
    balance: z.number().int().openapi({ description: "The payer's balance now, in cents" }),
    // The refusal the sync itself would get (too many ended), or null. (A description here would turn the
    // nullable reference into an allOf that admits no null.)
    wouldRefuse: z.union([ErrorDetail, z.null()]),
    refusals: z.array(
      z.object({
        seq: z.number().int(),
        externalAdId: z.number().int().nullable(),
        errorDetails: z.array(ErrorDetail),
      }),
    ),
  })
  .openapi("SyncPlan");
export type SyncPlan = z.infer<typeof SyncPlan>;

export const SyncIdParam = z.object({ syncId: pathId("syncId") });
