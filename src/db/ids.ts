/**
 * Ids that route. Every id of a table of rows a client group owns is issued from a block of
 * ID_BLOCK_SIZE ids leased to that group (`id_blocks`), so an id names its group, and so its shard
 * (src/db/shards.ts), by its block, with no lookup in the data: what lets the groups spread over many
 * databases, and a group move without renumbering what its clients stored. The directory leases every
 * block (no block is leased twice, whichever shard asks); a shard keeps a copy of its groups' blocks,
 * which its inserts read. The two logs, events and webhook deliveries, keep the database's own ids:
 * theirs are a shard's event feed cursor, which must grow with time across groups. Ids are 64-bit
 * (within 2^53 − 1, exact as JSON numbers; `rowId` in src/lib/fields.ts): past the 524,288 blocks of a
 * table that fit in 32 bits, its blocks go on, so no table runs out (docs/capacity.md, id headroom).
 *
 * An insert gives its id as `nextId(table, group)`: one past the newest id of the group's latest block
 * (and past the newest one deleted there, so no id comes back). When the block has fewer than
 * ID_BLOCK_SLACK ids left, or the group has none, the expression yields text, which SQLite refuses for an
 * integer primary key ("datatype mismatch"): nothing is written, and `leasingIdBlocks` leases blocks from
 * the directory and runs the write again.
 */
import { getTableName, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { DomainError, detail } from "../lib/errors";
import { log } from "../lib/log";
import { batchAll, type Db, d1Statement, getDb } from "./client";
import { rowChunks } from "./rowChunks";
import {
  adImages,
  ads,
  adUpdateRequests,
  bids,
  clientGroups,
  contacts,
  feeds,
  folders,
  idBlocks,
  imageJobs,
  manufacturers,
  notifications,
  publishJobs,
  syncs,
  taskRuns,
  tasks,
  users,
  walletEntries,
  webhookEndpoints,
} from "./schema";
import { failureText } from "./triggers";

export const ID_BLOCK_SIZE = 4096;

/** What SQLite answers an insert whose id is not an integer: here, an id block that is full or missing. */
const OUT_OF_BLOCK = "datatype mismatch";

type IdTable = SQLiteTable & { id: unknown };
type GroupRef = SQLWrapper | number;

/** The group of a client's rows (a client without a row is in group 1, as every client before groups). */
export const groupOfClient = (clientId: GroupRef): SQL =>
  sql`coalesce((SELECT group_id FROM api_clients WHERE id = ${clientId}), 1)`;

/** The group of a user's rows: its client's. */
export const groupOfUser = (userId: GroupRef): SQL =>
  groupOfClient(sql`(SELECT client_id FROM users WHERE id = ${userId})`);

/** The group of an ad's rows: its user's. */
export const groupOfAd = (adId: GroupRef): SQL => groupOfUser(sql`(SELECT user_id FROM ads WHERE id = ${adId})`);

// Literals, not parameters: D1 binds at most 100 parameters to a statement, and a multi-row insert names
// an id per row.
const SIZE = sql.raw(String(ID_BLOCK_SIZE));
const kindOf = (table: IdTable) => sql.raw(`'${getTableName(table)}'`);

/** The newest id issued in block `b` of the table: its newest row's, or the newest one deleted. */
const newestIn = (table: IdTable, floor: SQL) =>
  sql`max(coalesce((SELECT id FROM ${sql.identifier(getTableName(table))} WHERE id BETWEEN b.block * ${SIZE} AND b.block * ${SIZE} + ${SIZE} - 1 ORDER BY id DESC LIMIT 1), ${floor}), coalesce(b.deleted_high, 0))`;

/** The group's latest block of the table, as `b`. */
const latestBlock = (table: IdTable, group: GroupRef) =>
  sql`id_blocks b WHERE b.kind = ${kindOf(table)} AND b.group_id = ${group} ORDER BY b.block DESC LIMIT 1`;

/**
 * The most rows of one table a single insert writes (a batch's chunks hold 100): a block with fewer ids
 * left than this counts as full, so that every row of an insert gets an id inside its group's block.
 */
export const ID_BLOCK_SLACK = 256;

/**
 * The id of a row of `table` owned by `group`; `offset` (0 or more, under ID_BLOCK_SLACK) tells apart the
 * rows of one multi-row insert. It is added outside the block's subquery, so that a window function such
 * as `row_number() OVER ()` counts the insert's rows.
 */
export function nextId(table: IdTable, group: GroupRef, offset: number | SQL = 0): SQL {
  const step = typeof offset === "number" ? sql.raw(String(offset)) : offset;
  const next = sql`(SELECT CASE WHEN next <= (block + 1) * ${SIZE} - ${sql.raw(String(ID_BLOCK_SLACK))} THEN next END
    FROM (SELECT ${newestIn(table, sql`max(b.block * ${SIZE}, 1) - 1`)} + 1 AS next, b.block AS block FROM ${latestBlock(table, group)}))`;
  return sql`coalesce(${next} + ${step}, 'no room in the id block')`;
}

/** The tables whose ids are issued in blocks: every table of rows a client group owns that has an id. */
const ID_TABLES: readonly IdTable[] = [
  users,
  contacts,
  folders,
  manufacturers,
  ads,
  adImages,
  imageJobs,
  bids,
  webhookEndpoints,
  adUpdateRequests,
  publishJobs,
  tasks,
  taskRuns,
  notifications,
  walletEntries,
  syncs,
  feeds,
];

/** A group's need of a block of one table, as its shard sees it: the shard's latest block of it (-1: none). */
interface BlockNeed {
  kind: string;
  groupId: number;
  latest: number;
  /** The shard's highest block of the table, or of an id written outside any block (a seed's): leases go past it. */
  floor: number;
}

/** The shard's groups whose latest block of the table is more than half used, or that have none yet. */
const needsOf = (table: IdTable, shard: number) => {
  const kind = kindOf(table);
  return sql`SELECT ${kind} AS kind, g.id AS groupId,
      coalesce((SELECT max(block) FROM id_blocks WHERE kind = ${kind} AND group_id = g.id), -1) AS latest,
      max((SELECT coalesce(max(block), -1) FROM id_blocks WHERE kind = ${kind}), (SELECT coalesce(max(id), -1) FROM ${sql.identifier(getTableName(table))}) / ${SIZE}) AS floor
    FROM ${clientGroups} g
    WHERE g.shard = ${shard} AND NOT EXISTS (SELECT 1 FROM (SELECT b.block, ${newestIn(table, sql`b.block * ${SIZE}`)} AS newest FROM ${latestBlock(table, sql`g.id`)})
      WHERE newest < block * ${SIZE} + ${SIZE} / 2)`;
};

/**
 * In the directory: the table's next free block to the group, unless the directory already leased it one
 * past what the shard saw (a lease under way elsewhere, or one whose copy to the shard was lost). One
 * statement, atomic in the directory, so no block is ever leased twice, whichever shard asks.
 */
const lease = (need: BlockNeed) =>
  sql`INSERT INTO ${idBlocks} (kind, block, group_id)
    SELECT ${need.kind}, max((SELECT coalesce(max(block), -1) FROM id_blocks WHERE kind = ${need.kind}), ${need.floor}) + 1, ${need.groupId}
    WHERE (SELECT coalesce(max(block), -1) FROM id_blocks WHERE kind = ${need.kind} AND group_id = ${need.groupId}) = ${need.latest}`;

/** In the directory: the group's blocks of the table newer than the shard's latest. */
const leasedSince = (need: BlockNeed) =>
  sql`SELECT kind, block, group_id AS groupId FROM ${idBlocks} WHERE kind = ${need.kind} AND group_id = ${need.groupId} AND block > ${need.latest}`;

/** Block rows as the directory lists them. */
type BlockRow = { kind: string; block: number; groupId: number };

/** Copies blocks into a shard (one it already holds is left as it is: its `deleted_high` is the shard's). */
export async function copyBlocks(shard: D1Database, blocks: BlockRow[]): Promise<void> {
  const db = getDb(shard);
  await batchAll(
    db,
    rowChunks(idBlocks, blocks).map((chunk) => db.insert(idBlocks).values(chunk).onConflictDoNothing()),
  );
}

/**
 * Leases a block to each of the shard's groups and tables that needs one: what the shard needs (one
 * batch), the leases in the directory (one batch), their copies in the shard (one batch): three round
 * trips. Answers how many blocks it asked for. It runs ahead, in the shard's minute (src/cron/minute.ts),
 * so that a group's latest block is at most about half used plus a minute's inserts, and an outage of the
 * directory stops no insert; and when an insert found its block full anyway, which does not say whose:
 * every group's latest blocks are looked at. A copy lost on the way is made by the next top-up, which
 * finds the directory's block and takes it.
 */
export async function topUpIdBlocks({ number, d1: shard, directory }: Shard): Promise<number> {
  const needs = (await shard.batch(ID_TABLES.map((table) => d1Statement(shard, needsOf(table, number))))).flatMap(
    (answer) => answer.results as BlockNeed[],
  );
  if (needs.length === 0) return 0;
  const answers = await directory.batch([
    ...needs.map((need) => d1Statement(directory, lease(need))),
    ...needs.map((need) => d1Statement(directory, leasedSince(need))),
  ]);
  await copyBlocks(
    shard,
    answers.slice(needs.length).flatMap((answer) => answer.results as BlockRow[]),
  );
  return needs.length;
}

/**
 * A new group's first block of every table, in the directory's batch that creates it (`group`: its id,
 * as SQL); `copyGroup` (src/db/directory.ts) then copies them to the group's shard.
 */
export const firstBlocks = (group: SQL): SQL[] =>
  ID_TABLES.map(
    (table) =>
      sql`INSERT INTO ${idBlocks} (kind, block, group_id) SELECT ${kindOf(table)}, coalesce(max(block), -1) + 1, ${group} FROM id_blocks WHERE kind = ${kindOf(table)}`,
  );

/** Whether a write failed because an id block it issues from is full or missing (nothing was written). */
const outOfIdBlock = (error: unknown) => failureText(error).includes(OUT_OF_BLOCK);

/** How long a caller waits before trying a write again that found the directory out while it needed a block. */
const LEASE_RETRY_SECONDS = 10;

/**
 * Runs a write; when an id block it issues from is full, leases blocks and runs it once more. A lease
 * the directory does not answer refuses the write (503 `service_unavailable`, nothing written): the
 * shard's minute leases ahead, so that takes a group writing more than half a block in a minute.
 */
async function leasingOnce<T>(shard: Shard, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!outOfIdBlock(error)) throw error;
    await topUpIdBlocks(shard).catch((leaseError: unknown) => {
      log("error", "id block lease failed", { shard: shard.number, error: failureText(leaseError) });
      throw new DomainError(
        detail("service_unavailable", "ids: no new block of ids could be leased; nothing was written, try again"),
        { retryAfterSeconds: LEASE_RETRY_SECONDS },
      );
    });
    return write();
  }
}

/** A shard: its number, its database (or a session of it), and the directory it leases its id blocks from. */
export type Shard = { number: number; d1: D1Database; directory: D1Database };

const realStatement = Symbol("statement");
type Wrapped = D1PreparedStatement & { [realStatement]: D1PreparedStatement };

function wrapStatement(shard: Shard, statement: D1PreparedStatement): Wrapped {
  return {
    [realStatement]: statement,
    bind: (...values: unknown[]) => wrapStatement(shard, statement.bind(...values)),
    first: (column?: string) =>
      leasingOnce(shard, () => (column === undefined ? statement.first() : statement.first(column))),
    run: () => leasingOnce(shard, () => statement.run()),
    all: () => leasingOnce(shard, () => statement.all()),
    raw: (options?: { columnNames?: boolean }) =>
      leasingOnce(shard, () => (options?.columnNames ? statement.raw({ columnNames: true }) : statement.raw())),
  } as unknown as Wrapped;
}

/**
 * The database as the code uses it: every statement and batch that fails on a full id block leases
 * blocks and runs once more, so no write site handles it (the failed attempt wrote nothing: a statement
 * and a batch are each atomic).
 */
export function leasingIdBlocks<D extends D1Database>(shard: Shard & { d1: D }): D {
  const { d1 } = shard;
  const known = leasing.get(d1);
  if (known) return known as D;
  const wrapped = new Proxy(d1, {
    get(target, property, receiver) {
      if (property === "prepare") return (query: string) => wrapStatement(shard, target.prepare(query));
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) =>
          leasingOnce(shard, () =>
            target.batch(statements.map((statement) => (statement as Wrapped)[realStatement] ?? statement)),
          );
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  leasing.set(d1, wrapped);
  return wrapped;
}

/** One wrapper per binding or session (the binding lives as long as the isolate; `getDb` caches by it). */
const leasing = new WeakMap<D1Database, D1Database>();

/** The rows of one multi-row insert of one group, each with its id. */
export const withIds = <Row>(table: IdTable, rows: Row[], group: GroupRef) =>
  rows.map((row, index) => ({ ...row, id: nextId(table, group, index) }));

/**
 * The newest row of the group's table: the newest of its latest block that holds any (a block leased
 * moments ago may hold none yet). Within a group, ids grow with time. Later in the batch (one
 * transaction) that inserted it, the rows written below a new row name it by this.
 */
export const newestId = (table: IdTable, group: GroupRef): SQL =>
  sql`(SELECT newest FROM (SELECT (SELECT id FROM ${sql.identifier(getTableName(table))} WHERE id BETWEEN b.block * ${SIZE} AND b.block * ${SIZE} + ${SIZE} - 1 ORDER BY id DESC LIMIT 1) AS newest
    FROM id_blocks b WHERE b.kind = ${kindOf(table)} AND b.group_id = ${group} ORDER BY b.block DESC) WHERE newest IS NOT NULL LIMIT 1)`;

/** Blocks of a table that fit in a positive 32-bit id. */
const BLOCKS_IN_32_BITS = 2 ** 31 / ID_BLOCK_SIZE;

/**
 * Per table, the share of its 32-bit id space up to its highest block leased (what an operator watches:
 * past 1, the table issues ids wider than 32 bits, which clients must store as 64-bit integers).
 */
export async function idSpaceLeased(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .select({ kind: idBlocks.kind, highest: sql<number>`max(${idBlocks.block})` })
    .from(idBlocks)
    .groupBy(idBlocks.kind);
  return Object.fromEntries(rows.map((row) => [row.kind, (row.highest + 1) / BLOCKS_IN_32_BITS]));
}
