import { z } from "@hono/zod-openapi";
import { acrossFields, commaSeparated, fixed, queryId, queryInt, rowId, takingResponse, upTo } from "../../lib/fields";
import { JobKindEnum } from "../../lib/vocabulary";
import { EVENT_TYPES, type EventType, LATEST } from "./eventTypes";

/** The shapes of events, webhook endpoints and their deliveries: validation, types and the OpenAPI document. */

// The typed events: each type's `data`, each type's event, and their union.

/** One day's statistics of an ad on a portal: a `statistics.updated` event's data, and a day of `POST /statistics/`. */
export const DailyStatistics = z.object({
  date: z.string(),
  views: z.number().int(),
  asqs: z.number().int(),
  bids: z.number().int(),
  url: z.number().int(),
  phone: z.number().int(),
  favorites: z.number().int(),
});

const jobId = rowId().openapi({ description: "The job: GET /jobs/<queueItemId>" });
const listing = {
  queueItemId: jobId,
  kind: JobKindEnum.exclude(["feature"]),
  remoteAdId: z
    .number()
    .int()
    .nullable()
    .openapi({ description: "The listing at the marketplace (the website: the ad's id)" }),
};
const failure = { reason: z.string().nullable() };
const syncId = rowId().openapi({ description: "The sync: GET /syncs/<syncId>" });
const feedId = rowId().openapi({ description: "The feed: GET /feeds/<feedId>" });

/** A feed's fetch that ended with a body: a sync started (feed.fetched), or nothing changed (feed.unchanged). */
const feedFetched = z.object({
  feedId,
  httpStatus: z.number().int().openapi({ description: "200, or 304 when the feed said nothing changed" }),
  bytes: z.number().int(),
  items: z.number().int().nullable().openapi({ description: "Items the body held; null after a 304" }),
  syncId: syncId.nullable().openapi({ description: "The sync it started; null when nothing changed" }),
});

/** A feed's fetch that failed, and a feed that paused after failing in a row. */
const feedFailed = z.object({
  feedId,
  reason: z.string().openapi({ description: "HTTP status, timeout, too large, the line not parseable, the guard" }),
  httpStatus: z.number().int().nullable(),
  failures: z.number().int().openapi({ description: "Failed fetches in a row" }),
});
const time = z.string().openapi({ description: "YYYY-MM-DD hh:mm:ss, Europe/Amsterdam" });

/** Each event type's `data`: what happened, in the event's own words. */
const EVENT_DATA = {
  "publish.pending": z.object({ queueItemId: jobId, kind: JobKindEnum.exclude(["feature"]) }),
  "publish.active": z.object({ ...listing, startDate: time.nullable(), closeDate: time.nullable() }),
  "publish.updated": z.object(listing),
  "publish.offline": z.object(listing),
  "publish.error": z.object({ ...listing, ...failure }),
  "publish.cancelled": z.object({ ...listing, ...failure }),
  "feature.active": z.object({ queueItemId: jobId, feature: z.string() }),
  "feature.error": z.object({ queueItemId: jobId, feature: z.string(), ...failure }),
  "image.stored": z.object({
    jobId: rowId(),
    url: z.string().openapi({ description: "The stored original" }),
  }),
  "image.failed": z.object({ jobId: rowId(), reason: z.string() }),
  "bid.received": z.object({
    bidId: rowId(),
    amount: z.number().int().openapi({ description: "Cents" }),
    name: z.string(),
    message: z.string().nullable(),
    placedAt: time,
  }),
  "statistics.updated": DailyStatistics,
  "task.run": z.object({
    taskId: rowId(),
    feature: z.string(),
    ads: z.number().int(),
    queued: z.number().int(),
    skipped: z.number().int(),
    cost: z.number().int().openapi({ description: "Cents" }),
  }),
  "wallet.below_limit": z.object({ balance: z.number().int(), limit: z.number().int() }),
  "connection.expired": z.object({ reason: z.string() }),
  "webhook.disabled": z.object({ webhookId: rowId(), url: z.string(), reason: z.string() }),
  "job.waiting": z.object({
    queueItemId: jobId,
    reason: z.string().openapi({
      description: "Why the marketplace cannot be asked: no connection to ask through, or its last error",
    }),
  }),
  "job.wait_ended": z.object({
    queueItemId: jobId,
    outcome: z
      .enum(["succeeded", "failed", "cancelled", "superseded"])
      .openapi({ description: "How the job ended (failed with `job.unresolved`: settled without an answer)" }),
  }),
  "job.unresolved": z.object({
    queueItemId: jobId,
    kind: JobKindEnum,
    externalRef: z
      .string()
      .nullable()
      .openapi({ description: "The job's reference at the marketplace, to reconcile by" }),
    account: z.number().int().nullable().openapi({
      description:
        "The marketplace account the job may be at (its reference is unique per account); null when none is known",
    }),
    cost: z.number().int().openapi({ description: "Cents refunded" }),
    reason: z.string(),
  }),
  "sync.started": z.object({ syncId: syncId, items: z.number().int() }),
  "sync.progress": z.object({
    syncId: syncId,
    applied: z.number().int().openapi({ description: "Items applied so far, in stock order" }),
    items: z.number().int(),
    ended: z.number().int().optional().openapi({ description: "Ads this step ended (once every item is applied)" }),
  }),
  "sync.finished": z.object({
    syncId: syncId,
    state: z.enum(["finished", "failed"]),
    items: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    ended: z.number().int(),
    refused: z.number().int(),
    charged: z.number().int().openapi({ description: "Cents" }),
  }),
  "feed.fetched": feedFetched,
  "feed.unchanged": feedFetched,
  "feed.failed": feedFailed.extend({
    paused: z.boolean().openapi({ description: "This failure paused the feed (feed.paused follows)" }),
  }),
  "feed.paused": feedFailed,
} satisfies Record<EventType, z.ZodType>;

/** What every event carries beside its type and data. */
const eventFields = {
  eventId: rowId().openapi({ description: "Increases; resume after the last one you saw" }),
  occurredAt: z.string(),
  userId: rowId().nullable().openapi({ description: "null for events about the client itself" }),
  adId: rowId().nullable(),
  portal: z.string().nullable(),
};

/** An event of one type: its own component (`PublishActiveEvent`, …), so a client narrows on `type`. */
const eventOfType = <T extends EventType>(type: T) =>
  z.object({ ...eventFields, type: z.literal(type), data: EVENT_DATA[type] }).openapi(
    `${type
      .split(/[._]/)
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join("")}Event`,
  );

/** Each event type's own schema (its webhook payload's `data`). */
export const EVENT_SCHEMAS = Object.fromEntries(EVENT_TYPES.map((type) => [type, eventOfType(type)])) as {
  [T in EventType]: ReturnType<typeof eventOfType<T>>;
};
type EventSchemaOf = (typeof EVENT_SCHEMAS)[EventType];

/** An event as the API writes it: a union keyed on `type`, each type with its own `data`. */
export const KnownEvent = z.discriminatedUnion(
  "type",
  Object.values(EVENT_SCHEMAS) as [EventSchemaOf, ...EventSchemaOf[]],
);

/**
 * An event of a type added after this version of the document: event types are open within /v1
 * (docs/versioning.md), so a client generated from the document reads one and may skip it.
 */
const LaterEvent = z
  .object({
    ...eventFields,
    type: z.string().openapi({ description: "A type this version of the document does not list" }),
    data: z.record(z.string(), z.unknown()),
  })
  .openapi("LaterEvent");

/** An event as a client reads it: one of the known types, or a later one. */
export const Event = z.union([KnownEvent, LaterEvent]).openapi("Event");
/** Each event type's own schema (its webhook payload's `data`: `PublishActiveEvent`, …), and `KnownEvent`:
 * an event as the API writes it, a union keyed on `type`, each type with its own `data`. */
export type EventOut = z.infer<typeof KnownEvent>;

const eventTypes = commaSeparated(EVENT_TYPES, "One type or several, comma-separated");

export const EventsQuery = z.object({
  after: z
    .union([z.literal(LATEST), queryInt(0)])
    .optional()
    .openapi({
      description:
        "The cursor: events with a larger id (default 0, from the start; not beyond the latest), or `latest`: no events, and the cursor to poll from for what happens next",
    }),
  type: eventTypes.optional(),
  userId: queryId().optional(),
  limit: queryInt(1, 500).optional().openapi({ description: "At most 500; default 100" }),
  shard: queryInt(1).optional().openapi({
    description:
      "Internal clients, without `userId`: the shard whose feed to read. Every client's events are kept with its data on one shard, each shard's feed with its own cursor; the answer's `shards` lists them. Default: your own client's shard",
  }),
});

/** Event types as a webhook endpoint subscribes to them (written and read alike). */
export const EventTypes = z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length);

export const Webhook = z
  .object({
    webhookId: rowId(),
    url: z.string(),
    types: EventTypes.openapi({ description: "Subscribed event types; empty: every type" }),
    enabled: z.boolean(),
    description: z.string(),
    disabledReason: z.string().nullable().openapi({ description: "Why delivery was switched off, when it was" }),
    pausedUntil: z.string().nullable().openapi({
      description:
        "Set by the breaker after 5 failed deliveries in a row: deliveries wait until then, and resume by themselves",
    }),
    pausedReason: z.string().nullable(),
    queuedDeliveries: z
      .number()
      .int()
      .openapi({ description: "Deliveries queued for it now (at most 100; later events follow as these end)" }),
    created: z.string(),
    updated: z.string(),
  })
  .openapi("Webhook");
export const WebhookWithSecret = Webhook.extend({
  secret: z.string().openapi({ description: "The signing secret (whsec_…): shown this once" }),
}).openapi("WebhookWithSecret");

const url = z
  .url({ protocol: /^https?$/, error: "must be an https URL" })
  .max(2048)
  .openapi({ description: "https (http only in local development); private and loopback hosts are refused" });
const webhookFields = {
  url,
  types: EventTypes.optional(),
  enabled: z.boolean().optional(),
  description: upTo(255).optional(),
};
/** POST /webhooks/ and PUT /webhooks/<id> take an endpoint as answers show it too (the state is ignored). */
export const CreateWebhook = takingResponse(z.object(webhookFields), WebhookWithSecret).openapi("CreateWebhook");
export const UpdateWebhook = takingResponse(
  z.object({
    ...webhookFields,
    url: url.optional(),
    webhookId: fixed(rowId().optional()),
  }),
  Webhook,
).openapi("UpdateWebhook");

export const ReplayWebhook = z
  .object({
    after: z
      .number()
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .openapi({ description: acrossFields("0, or the eventId of one of the client's own events") }),
  })
  .openapi("ReplayWebhook");

// The webhook endpoints' other response shapes.

/** The `data` of a `webhook.test` message. */
export const WebhookTestData = z.object({ webhookId: rowId() }).openapi("WebhookTestData");

export const WebhookDelivery = z
  .object({
    deliveryId: rowId(),
    eventId: rowId().nullable(),
    messageId: z.string().openapi({ description: "The webhook-id header: the same for every attempt of an event" }),
    attempt: z.number().int(),
    statusCode: z.number().int().nullable(),
    latencyMs: z.number().int().nullable(),
    error: z.string().nullable(),
    succeeded: z.boolean(),
    nextAttempt: z.string().nullable(),
    created: z.string(),
  })
  .openapi("WebhookDelivery");

export const ReplayQueued = z.object({
  queued: z.number().int().openapi({ description: "Events it delivers (those subscribed to)" }),
});
