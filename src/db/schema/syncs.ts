/**
 * Stock syncs: a user's whole stock sent at once, applied in steps, and reported per item. The stock and
 * its report live in R2 (`STOCKS`, src/services/syncs/stockStore.ts), a chunk of a step's items per
 * object: an unchanged item writes no row of D1.
 */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./accounts";
import { byId, group, owners, USER_PARENT } from "./ownership";
import { actingClient, createdAt, updatedAt } from "./shared";

export const SYNC_STATES = ["receiving", "running", "finished", "refused", "failed"] as const;
export type SyncState = (typeof SYNC_STATES)[number];
/** What a sync does with the user's synced ads its stock no longer holds, once they are off every target. */
export const SYNC_REMOVALS = ["delete", "archive"] as const;
export const SYNC_OUTCOMES = ["created", "updated", "unchanged", "ended", "refused"] as const;
export type SyncOutcome = (typeof SYNC_OUTCOMES)[number];

/**
 * One sync of a user's stock. `cursor` counts the items applied (whole chunks), so a step that dies is run
 * again from it; `phase` is `items` while the stock's items are applied, then `ending` while the ads it no
 * longer holds are taken off and removed (`endScan`: the last ad id looked at; `endChunks`: the chunks of
 * ended ads reported). The caller's tenancy is kept (`clientId`, `internal`, `partner`): the steps act as
 * the client that sent the stock.
 */
export const syncs = sqliteTable(
  "syncs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ...actingClient(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    state: text("state", { enum: SYNC_STATES }).notNull().default("receiving"),
    phase: text("phase", { enum: ["items", "ending", "done"] })
      .notNull()
      .default("items"),
    removal: text("removal", { enum: SYNC_REMOVALS }).notNull().default("delete"),
    maxEndedPercent: integer("max_ended_percent").notNull(),
    idempotencyKey: text("idempotency_key"),
    /** SHA-256 of the stock as sent: a repeat with the same key and another stock is refused. */
    digest: text("digest"),
    mediaBase: text("media_base").notNull().default(""),
    items: integer("items").notNull().default(0),
    cursor: integer("cursor").notNull().default(0),
    endScan: integer("end_scan").notNull().default(0),
    endChunks: integer("end_chunks").notNull().default(0),
    created: integer("created").notNull().default(0),
    updated: integer("updated").notNull().default(0),
    unchanged: integer("unchanged").notNull().default(0),
    ended: integer("ended").notNull().default(0),
    refused: integer("refused").notNull().default(0),
    /** Cents charged for the placements the sync queued. */
    charged: integer("charged").notNull().default(0),
    reason: text("reason"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    finishedAt: text("finished_at"),
  },
  (t) => [
    index("syncs_user_idx").on(t.userId, t.id),
    uniqueIndex("syncs_idempotency_key").on(t.clientId, t.idempotencyKey).where(sql`idempotency_key IS NOT NULL`),
    // One sync of a user at a time.
    uniqueIndex("syncs_one_running").on(t.userId).where(sql`state IN ('receiving', 'running')`),
  ],
);

export const syncsOwners = owners([[syncs, group(byId("syncs"), { parents: USER_PARENT })]]);
