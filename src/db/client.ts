import { is, type Query, SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { drizzle } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";

export type Db = ReturnType<typeof createDb>;

// Without the schema: its relational-query config would be built for every request's D1 session (5% of a
// page's CPU), and no query here uses Drizzle's relational API.
const createDb = (d1: D1Database) => drizzle(d1);
const cache = new WeakMap<D1Database, Db>();

/** One Drizzle instance per D1 binding object (the binding lives as long as the isolate). */
export function getDb(d1: D1Database): Db {
  let db = cache.get(d1);
  if (!db) {
    db = createDb(d1);
    cache.set(d1, db);
  }
  return db;
}

/** `db.batch` for a list of statements built at run time (D1 wants at least one; none is a no-op). */
export async function batchAll(db: Db, statements: BatchItem<"sqlite">[]): Promise<unknown[]> {
  const [first, ...rest] = statements;
  return first ? db.batch([first, ...rest]) : [];
}

/** Groups of statements in one D1 batch (one round trip, one transaction); answers each group's results. */
export async function batchGroups(db: Db, groups: BatchItem<"sqlite">[][]): Promise<unknown[][]> {
  const results = await batchAll(db, groups.flat());
  let at = 0;
  return groups.map((group) => {
    at += group.length;
    return results.slice(at - group.length, at);
  });
}

/** Renders Drizzle SQL to text and parameters outside a query. */
export const dialect = new SQLiteAsyncDialect();

/**
 * A statement for `D1Database.batch` from Drizzle's sql template or a Drizzle query. Drizzle's own
 * batch cannot take raw SQL with parameters, so batches of conditional SQL go to D1 directly.
 */
export function d1Statement(d1: D1Database, query: SQL | { toSQL(): Query }): D1PreparedStatement {
  const { sql, params } = is(query, SQL) ? dialect.sqlToQuery(query) : query.toSQL();
  return d1.prepare(sql).bind(...params);
}
