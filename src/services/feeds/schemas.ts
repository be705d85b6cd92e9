import { z } from "@hono/zod-openapi";
import { FEED_FORMATS, FEED_OUTCOMES, SYNC_REMOVALS } from "../../db/schema";
import { fixed, id, openEnum, pagingQuery, pathId, queryId, rowId, takingResponse } from "../../lib/fields";
import { DEFAULT_MAX_ENDED_PERCENT } from "../syncs";

/** The shapes of feeds (a user's stock fetched from a URL on a schedule): validation, types and the document. */

const minute = z.number().int().min(0).max(59).openapi({ description: "Minutes past the hour" });

/** When a feed is fetched: hourly at a minute, or daily at a time, Amsterdam time. */
export const FeedSchedule = z
  .discriminatedUnion("every", [
    z.strictObject({ every: z.literal("hourly"), minute }),
    z.strictObject({
      every: z.literal("daily"),
      hour: z.number().int().min(0).max(23).openapi({ description: "Hour of the day, Amsterdam time" }),
      minute,
    }),
  ])
  .openapi("FeedSchedule", { description: "Hourly at `minute`, or daily at `hour`:`minute`, Amsterdam time" });
export type FeedSchedule = z.infer<typeof FeedSchedule>;

/** An HTTP header name (RFC 9110's token). */
const headerName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: "must be an HTTP header name" });

const url = z
  .url({ protocol: /^https?$/, error: "must be an http or https URL" })
  .max(2048)
  .openapi({ description: "Where the stock is served; fetched with GET" });
const format = z
  .enum(FEED_FORMATS)
  .openapi({ description: "ndjson: a SyncItem a line; json: {items: [...]}; csv: a row an item (docs/feeds.md)" });
const removal = z
  .enum(SYNC_REMOVALS)
  .openapi({ description: "What happens to a synced ad the feed no longer holds, once it is off every target" });
const maxEndedPercent = z.number().int().min(0).max(100).openapi({
  description:
    "The most of the user's synced ads a fetch may end, in percent; more refuses the fetch's sync (100: no limit)",
});

/** The secret a fetch sends as a header (an API key of the dealer's system); its value is never shown. */
const header = <Value extends z.ZodType<string | undefined>>(value: Value) =>
  z.strictObject({ name: headerName, value }).nullable().openapi({
    description: "A header sent with every fetch, such as a key of the dealer's system; null: none",
  });
const headerValue = z.string().min(1).max(1000).openapi({ description: "Sealed at rest; never shown" });

/** The last fetch of a feed, as `GET /feeds/<feedId>` shows it. */
export const FeedFetch = z
  .object({
    at: z.string(),
    outcome: openEnum(FEED_OUTCOMES, "fetched: a sync started; unchanged: 304 or the same bytes; failed: see failure."),
    httpStatus: z.number().int().nullable().openapi({ description: "The feed's answer; null when none came" }),
    bytes: z.number().int().nullable(),
    items: z.number().int().nullable(),
    syncId: rowId().nullable().openapi({ description: "The sync it started: GET /syncs/<syncId>" }),
    failure: z
      .string()
      .nullable()
      .openapi({ description: "Why it failed: HTTP status, timeout, size, line, the guard" }),
  })
  .openapi("FeedFetch");

/** A feed as the API shows it. */
export const Feed = z
  .object({
    feedId: rowId(),
    userId: rowId(),
    url: z.string(),
    format: z.enum(FEED_FORMATS),
    header: z
      .object({ name: z.string() })
      .nullable()
      .openapi({ description: "The header's name; its value is secret" }),
    schedule: FeedSchedule,
    removal: z.enum(SYNC_REMOVALS),
    maxEndedPercent: z.number().int(),
    paused: z.boolean(),
    pausedReason: z.string().nullable().openapi({ description: "Why the feed paused itself, after failed fetches" }),
    failures: z.number().int().openapi({ description: "Failed fetches in a row; at 5 the feed pauses" }),
    nextRunAt: z.string().openapi({ description: "When it is fetched next (Amsterdam time)" }),
    queued: z.boolean().openapi({ description: "A fetch is waiting or under way" }),
    lastFetch: FeedFetch.nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Feed");
export type FeedView = z.infer<typeof Feed>;

/** POST /feeds/: a feed of a user (a feed's answer sent back is taken too, its read-only fields ignored). */
export const CreateFeed = takingResponse(
  z.object({
    userId: id(),
    url,
    format,
    header: header(headerValue).optional(),
    schedule: FeedSchedule,
    removal: removal.optional().default("delete"),
    maxEndedPercent: maxEndedPercent.optional().default(DEFAULT_MAX_ENDED_PERCENT),
    paused: z.boolean().optional().default(false),
  }),
  Feed,
).openapi("CreateFeed");
export type CreateFeed = z.output<typeof CreateFeed>;

/** PUT /feeds/<feedId>: the fields to change; a header without `value` keeps the stored secret. */
export const UpdateFeed = takingResponse(
  z.object({
    feedId: fixed(id().optional()),
    userId: fixed(id().optional()),
    url: url.optional(),
    format: format.optional(),
    header: header(
      headerValue.optional().openapi({
        description:
          "Sealed at rest; never shown. Left out, the stored secret is kept (required when the feed has no header yet)",
      }),
    ).optional(),
    schedule: FeedSchedule.optional(),
    removal: removal.optional(),
    maxEndedPercent: maxEndedPercent.optional(),
    paused: z.boolean().optional().openapi({ description: "false resumes a paused feed, its failures forgotten" }),
  }),
  Feed,
).openapi("UpdateFeed");
export type UpdateFeed = z.output<typeof UpdateFeed>;

/** POST /feeds/preview: a URL fetched once, and the sync's dry run of what it serves. */
export const FeedPreview = z
  .strictObject({
    userId: id(),
    url,
    format,
    header: header(headerValue).optional(),
    removal: removal.optional().default("delete"),
    maxEndedPercent: maxEndedPercent.optional().default(DEFAULT_MAX_ENDED_PERCENT),
  })
  .openapi("FeedPreview");
export type FeedPreview = z.output<typeof FeedPreview>;

export const FeedIdParam = z.object({ feedId: pathId("feedId") });
export const FeedsQuery = pagingQuery(100).extend({ userId: queryId() });
