/** The event log and webhooks. */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { byId, group, owners, transient } from "./ownership";
import { createdAt, updatedAt } from "./shared";

/**
 * The event log (a transactional outbox): every state change a client may care about is written here in
 * the same D1 batch as the change itself. `id` increases, so a reader resumes after the last id it saw;
 * `client_id` is the client of the user the event is about (tenancy of the feed).
 */
export const events = sqliteTable(
  "events",
  {
    // The rowid, not AUTOINCREMENT (no id counter written per event): an id could only come back if the
    // newest event were deleted, and the purge keeps it.
    id: integer("id").primaryKey(),
    clientId: integer("client_id"),
    /** null for events about the client itself (webhook.disabled). */
    userId: integer("user_id"),
    type: text("type").notNull(),
    adId: integer("ad_id"),
    portal: text("portal"),
    data: text("data").notNull().default("{}"),
    occurredAt: text("occurred_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
    /** An event a group move brought from another shard: its id there (src/db/moves/). */
    originId: integer("origin_id"),
    /**
     * Its id on each shard the group's moves took it through, by era (`client_groups.event_eras`; null
     * where it did not exist yet): a feed cursor from any era before reads on where it was.
     */
    origins: text("origins", { mode: "json" }).$type<(number | null)[]>(),
  },
  (t) => [
    index("events_client").on(t.clientId, t.id),
    index("events_user").on(t.userId, t.id),
    index("events_origin").on(t.originId).where(sql`${t.originId} IS NOT NULL`),
  ],
);

/** A client's webhook endpoint; its signing secrets are sealed like portal tokens. */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    clientId: integer("client_id").notNull(),
    url: text("url").notNull(),
    /** Subscribed event types; null means every type. */
    types: text("types", { mode: "json" }).$type<string[] | null>(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    description: text("description").notNull().default(""),
    secret: text("secret").notNull(),
    /** After a rotation the previous secret signs too, until this instant. */
    previousSecret: text("previous_secret"),
    previousSecretUntil: text("previous_secret_until"),
    /** The last event handed to delivery (the dispatcher's cursor; a replay moves it back). */
    lastEventId: integer("last_event_id").notNull().default(0),
    /** Since when every delivery failed; null after a success. */
    failingSince: text("failing_since"),
    disabledReason: text("disabled_reason"),
    /** Deliveries handed to the queue and not yet ended (bounded per endpoint; the dispatcher waits). */
    inQueue: integer("in_queue").notNull().default(0),
    /** Deliveries that failed in a row; at the breaker's threshold the endpoint is paused. */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    /** The breaker: no delivery is attempted before this instant; they wait in the queue. */
    pausedUntil: text("paused_until"),
    pausedReason: text("paused_reason"),
    /** Its deliveries take the slow lane until this instant (it did not answer within the fast lane's budget). */
    slowUntil: text("slow_until"),
    /** A replay runs until the cursor reaches this event. */
    replayUntil: integer("replay_until").notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("webhook_endpoints_client").on(t.clientId)],
);

/**
 * Deliveries to an endpoint in flight now: a row per delivery holding its lease until it ends or
 * expires (a consumer that died leaves one that runs out), so an endpoint has a bounded number at once.
 * Without rowid, keyed by what counts them: taking a lease writes one row and no index or id counter.
 */
export const webhookLeases = sqliteTable(
  "webhook_leases",
  {
    endpointId: integer("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    expiresAt: text("expires_at").notNull(),
    /** The delivery holding it (random): it ends its lease by the whole key. */
    holder: integer("holder").notNull(),
  },
  (t) => [primaryKey({ columns: [t.endpointId, t.expiresAt, t.holder] })],
);

/** One delivery attempt of an event (or a test message) to an endpoint. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    // The rowid, as the events' (the purge keeps the newest delivery).
    id: integer("id").primaryKey(),
    endpointId: integer("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    /** null for a test message. */
    eventId: integer("event_id"),
    messageId: text("message_id").notNull(),
    attempt: integer("attempt").notNull(),
    statusCode: integer("status_code"),
    latencyMs: integer("latency_ms"),
    error: text("error"),
    succeeded: integer("succeeded", { mode: "boolean" }).notNull().default(false),
    nextAttemptAt: text("next_attempt_at"),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_deliveries_endpoint").on(t.endpointId, t.id)],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const eventsOwners = owners([
  [webhookEndpoints, group(byId("webhook_endpoints"))],
  [
    webhookDeliveries,
    group(byId("webhook_endpoints", "endpoint_id"), {
      parents: { endpoint_id: "webhook_endpoints" },
      renumbered: true,
    }),
  ],
  [events, group({ client: "client_id" }, { renumbered: true })],
  [webhookLeases, transient("webhook_endpoints")],
]);
