/** Idempotency keys and response-cache revisions. */
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { group, owners, SHARD } from "./ownership";

/**
 * Revision counters behind the response cache and the ETags: a write bumps its keys, so cached responses
 * go stale at once. A conditional write (If-Match) that finds another revision sets -1, which the check
 * refuses: the whole batch of the write rolls back.
 */
export const cacheRevisions = sqliteTable(
  "cache_revisions",
  {
    key: text("scope").primaryKey(),
    revision: integer("revision").notNull().default(0),
  },
  (t) => [check("if_match", sql`${t.revision} >= 0`)],
);

/**
 * Idempotency keys (the IETF httpapi draft): the first response to a write with a key, replayed for the
 * same key and request within 24 hours.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    clientId: integer("client_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path, query and body: the same key with another request is refused. */
    fingerprint: text("fingerprint").notNull(),
    /** Set while the first request runs; a request that died leaves a lock that lapses at this instant. */
    lockedUntil: text("locked_until"),
    status: integer("status"),
    headers: text("headers", { mode: "json" }).$type<Record<string, string>>(),
    body: text("body"),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.key] }), index("idempotency_keys_expiry").on(t.expiresAt)],
);

/**
 * The change log of a group move (src/db/moves/): while a group moves off this shard, triggers the move
 * installs write here the key of every row of the group that changes, so the move copies it again.
 */
export const moveLog = sqliteTable("move_log", {
  seq: integer("seq").primaryKey({ autoIncrement: true }),
  /** The moving group. */
  groupId: integer("group_id").notNull(),
  /** The table of the row that changed. */
  tableName: text("table_name").notNull(),
  /** Its primary key, as a JSON array of the key's columns. */
  rowKey: text("row_key").notNull(),
});

/**
 * The move's own writes on the shard a group moves to (src/db/moves/): each of its batches holds the
 * group's row here while it writes, and triggers refuse every other write to the group's rows until the
 * switch, so that nothing but the move (not this shard's cron) changes the copy.
 */
export const moveWrites = sqliteTable("move_writes", {
  groupId: integer("group_id").primaryKey(),
});

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const operationsOwners = owners([
  // A client's keys are on its own group's shard, whichever shard their requests wrote (middleware/idempotency.ts).
  [idempotencyKeys, group({ client: "client_id" })],
  [cacheRevisions, group("revision")],
  [moveLog, SHARD],
  [moveWrites, SHARD],
]);
