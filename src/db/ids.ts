/**
 * Ids that route. Every id of a table of rows a client group owns is issued from a block of
 * ID_BLOCK_SIZE ids leased to that group (`id_blocks`), so an id names its group by its block, with no
 * lookup in the data: what lets the groups spread over many databases, and a group move without
 * renumbering what its clients stored. The two logs, events and webhook deliveries, keep the database's
 * own ids: theirs are the event feed's cursor, which must grow with time across groups. An id stays a
 * positive 32-bit integer while fewer than 2^31 / 4,096 = 524,288 blocks of its table are leased.
 *
 * An insert gives its id as `nextId(table, group)`: one past the newest id of the group's latest block
 * (and past the newest one deleted there, so no id comes back). When the block has fewer than
 * ID_BLOCK_SLACK ids left, or the group has none, the expression yields text, which SQLite refuses for an
 * integer primary key ("datatype mismatch"): nothing is written, and `leasingIdBlocks` leases blocks and
 * runs the write again.
 */
import { getTableName, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { type Db, d1Statement } from "./client";
import {
  adImages,
  ads,
  adUpdateRequests,
  bids,
  clientGroups,
  contacts,
  folders,
  idBlocks,
  imageJobs,
  manufacturers,
  notifications,
  publishJobs,
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
];

/**
 * Leases a table's next free block to every group (or the one group given) whose latest block of it is
 * more than half used, or that has none yet: one statement per table, each atomic in its database, so
 * two at once never lease one block twice. A block leased lies past every id of the table, so it starts
 * empty even where rows were written without an id of a block (a seed, a bench).
 */
const topUp = (table: IdTable, group?: SQL) => {
  const kind = kindOf(table);
  return sql`INSERT INTO ${idBlocks} (kind, block, group_id)
    SELECT ${kind}, max((SELECT coalesce(max(block), -1) FROM id_blocks WHERE kind = ${kind}), (SELECT coalesce(max(id), -1) FROM ${sql.identifier(getTableName(table))}) / ${SIZE}) + row_number() OVER (ORDER BY g.id), g.id
    FROM ${clientGroups} g
    WHERE ${group ? sql`g.id = ${group}` : sql`1`} AND NOT EXISTS (SELECT 1 FROM (SELECT b.block, ${newestIn(table, sql`b.block * ${SIZE}`)} AS newest FROM ${latestBlock(table, sql`g.id`)})
      WHERE newest < block * ${SIZE} + ${SIZE} / 2)`;
};

/**
 * Leases a block to each group and table that needs one (`topUp`): one batch. It runs when an insert
 * found its block full, which does not say whose: every group's latest blocks are looked at.
 */
export async function topUpIdBlocks(d1: D1Database): Promise<void> {
  await d1.batch(ID_TABLES.map((table) => d1Statement(d1, topUp(table))));
}

/** A new group's first block of every table, for the batch that creates it (`group`: its id, as SQL). */
export const firstBlocks = (group: SQL): SQL[] => ID_TABLES.map((table) => topUp(table, group));

/** Whether a write failed because an id block it issues from is full or missing (nothing was written). */
const outOfIdBlock = (error: unknown) => failureText(error).includes(OUT_OF_BLOCK);

/** Runs a write; when an id block it issues from is full, leases blocks and runs it once more. */
async function leasingOnce<T>(d1: D1Database, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!outOfIdBlock(error)) throw error;
    await topUpIdBlocks(d1);
    return write();
  }
}

const realStatement = Symbol("statement");
type Wrapped = D1PreparedStatement & { [realStatement]: D1PreparedStatement };

function wrapStatement(d1: D1Database, statement: D1PreparedStatement): Wrapped {
  return {
    [realStatement]: statement,
    bind: (...values: unknown[]) => wrapStatement(d1, statement.bind(...values)),
    first: (column?: string) =>
      leasingOnce(d1, () => (column === undefined ? statement.first() : statement.first(column))),
    run: () => leasingOnce(d1, () => statement.run()),
    all: () => leasingOnce(d1, () => statement.all()),
    raw: (options?: { columnNames?: boolean }) =>
      leasingOnce(d1, () => (options?.columnNames ? statement.raw({ columnNames: true }) : statement.raw())),
  } as unknown as Wrapped;
}

/**
 * The database as the code uses it: every statement and batch that fails on a full id block leases
 * blocks and runs once more, so no write site handles it (the failed attempt wrote nothing: a statement
 * and a batch are each atomic).
 */
export function leasingIdBlocks<D extends D1Database>(d1: D): D {
  const known = leasing.get(d1);
  if (known) return known as D;
  const wrapped = new Proxy(d1, {
    get(target, property, receiver) {
      if (property === "prepare") return (query: string) => wrapStatement(target, target.prepare(query));
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) =>
          leasingOnce(target, () =>
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

/** The Worker's bindings with the database that leases id blocks (`leasingIdBlocks`). */
export const withIdLeasing = <E extends { DB: D1Database }>(env: E): E => ({ ...env, DB: leasingIdBlocks(env.DB) });

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

/** Per table, the share of its 32-bit id space up to its highest block leased (what an operator watches). */
export async function idSpaceLeased(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .select({ kind: idBlocks.kind, highest: sql<number>`max(${idBlocks.block})` })
    .from(idBlocks)
    .groupBy(idBlocks.kind);
  return Object.fromEntries(rows.map((row) => [row.kind, (row.highest + 1) / BLOCKS_IN_32_BITS]));
}
