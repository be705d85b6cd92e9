/** Client groups and the blocks of ids each group leases: what a split over many databases routes by. */
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { DIRECTORY, owners } from "./ownership";
import { createdAt } from "./shared";

/** A group of API clients (a dealer group, an agency with its dealers): the data of a group stays together. */
export const clientGroups = sqliteTable("client_groups", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  /** The shard (src/db/shards.ts) that holds the group's rows: 1 is `DB`, n is `DB_n`. */
  shard: integer("shard").notNull().default(1),
  /**
   * In the directory, while the group moves (src/db/moves/): the shard it moves to; clients of a moving
   * group are cached briefly. In a shard's copy, that the move holds the group's rows there (filling the
   * copy, or fenced): the shard's scheduled work leaves them (src/db/directory.ts `settledClient`).
   */
  movingTo: integer("moving_to"),
  /**
   * After a move, the id of the group's first event on its shard: an event cursor below it was handed out
   * by the shard before, and is read through the moved events' `origin_id`.
   */
  eventsFrom: integer("events_from"),
  /**
   * Every `events_from` the group's moves set, oldest first (JSON): the eras of its event ids. A cursor
   * below the first was handed out in era 0, between the n-th and the next in era n.
   */
  eventEras: text("event_eras", { mode: "json" }).$type<number[]>(),
  /**
   * In the directory, a move's progress (JSON, src/db/moves/) from its start until it is confirmed: any
   * runner resumes the move from it. Not used on the shards.
   */
  moveProgress: text("move_progress"),
  createdAt: createdAt(),
});

/**
 * Blocks of ids (src/db/ids.ts): block `block` of a table holds its ids `block × ID_BLOCK_SIZE` to the
 * next block's first, all issued to rows of one client group, so an id names its group by its block.
 */
export const idBlocks = sqliteTable(
  "id_blocks",
  {
    /** The table whose ids the block holds. */
    kind: text("kind").notNull(),
    block: integer("block").notNull(),
    groupId: integer("group_id").notNull(),
    /** The highest id deleted while it was the newest of its block: no id up to it is issued again. */
    deletedHigh: integer("deleted_high"),
  },
  (t) => [primaryKey({ columns: [t.kind, t.block] }), index("id_blocks_group").on(t.kind, t.groupId, t.block)],
);

/** Whose rows each table here holds (./ownership.ts): the directory's, copied to a group's shard. */
export const directoryOwners = owners([
  [clientGroups, DIRECTORY],
  [idBlocks, DIRECTORY],
]);
