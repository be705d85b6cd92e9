/**
 * Feeds: a user's stock at a URL of the dealer's own, fetched on a schedule by the shard's cron (in the
 * client's lanes) and applied as a stock sync (./syncs.ts) when it changed.
 */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "./accounts";
import { byId, group, owners } from "./ownership";
import { actingClient, createdAt, updatedAt } from "./shared";
import { SYNC_REMOVALS, syncs } from "./syncs";

export const FEED_FORMATS = ["ndjson", "json", "csv"] as const;
export type FeedFormat = (typeof FEED_FORMATS)[number];
/** How a fetch ended: a sync started, nothing changed (304 or the same bytes), or failed (`lastFailure`). */
export const FEED_OUTCOMES = ["fetched", "unchanged", "failed"] as const;
export type FeedOutcome = (typeof FEED_OUTCOMES)[number];

/**
 * One feed of a user. `every` `hourly` runs at `minute` past each hour, `daily` at `hour`:`minute`,
 * Amsterdam time; `nextRunAt` is the next due instant (UTC). `queuedAt` is set while a fetch waits or runs
 * in the client's lanes (one at a time per feed). `etag`, `lastModified` and `digest` are of the last body
 * applied (by `appliedSyncId`): the next fetch asks for it conditionally, and the same bytes start no
 * sync, unless that sync failed. `failures` counts
 * failed fetches in a row; at FEED_MAX_FAILURES the feed pauses. The secret header's value is sealed
 * (src/lib/secretBox.ts). The client's tenancy is kept (`clientId`, `internal`, `partner`): the sync a fetch
 * starts acts as the client that registered the feed.
 */
export const feeds = sqliteTable(
  "feeds",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ...actingClient(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    format: text("format", { enum: FEED_FORMATS }).notNull(),
    headerName: text("header_name"),
    headerValue: text("header_value"),
    every: text("every", { enum: ["hourly", "daily"] }).notNull(),
    hour: integer("hour").notNull().default(0),
    minute: integer("minute").notNull().default(0),
    removal: text("removal", { enum: SYNC_REMOVALS }).notNull().default("delete"),
    maxEndedPercent: integer("max_ended_percent").notNull(),
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    pausedReason: text("paused_reason"),
    mediaBase: text("media_base").notNull().default(""),
    nextRunAt: text("next_run_at").notNull(),
    queuedAt: text("queued_at"),
    etag: text("etag"),
    lastModified: text("last_modified"),
    digest: text("digest"),
    /** The sync the body of `digest` started: if it failed, that body counts as not applied. */
    appliedSyncId: integer("applied_sync_id").references(() => syncs.id, { onDelete: "set null" }),
    failures: integer("failures").notNull().default(0),
    lastFetchAt: text("last_fetch_at"),
    lastOutcome: text("last_outcome", { enum: FEED_OUTCOMES }),
    lastHttpStatus: integer("last_http_status"),
    lastBytes: integer("last_bytes"),
    lastItems: integer("last_items"),
    lastSyncId: integer("last_sync_id").references(() => syncs.id, { onDelete: "set null" }),
    lastFailure: text("last_failure"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("feeds_user_idx").on(t.userId, t.id), index("feeds_due_idx").on(t.nextRunAt).where(sql`paused = 0`)],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const feedsOwners = owners([
  [feeds, group(byId("feeds"), { parents: { user_id: "users", last_sync_id: "syncs", applied_sync_id: "syncs" } })],
]);
