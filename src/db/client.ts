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

/** Named statements of one group: a statement, or a list of statements read as one list of results. */
export type NamedStatements = Record<string, BatchItem<"sqlite"> | readonly BatchItem<"sqlite">[]>;
/** Each name's result: the statement's own result type, or a list of them. */
export type NamedResults<S extends NamedStatements> = {
  [K in keyof S]: S[K] extends readonly BatchItem<"sqlite">[] ? Awaited<S[K][number]>[] : Awaited<S[K]>;
};

/** A group's statements in the order of its names (what `namedBatches` sends). */
export const statementsOf = (group: NamedStatements): BatchItem<"sqlite">[] => Object.values(group).flat();

/**
 * Groups of named statements in one D1 batch (one round trip, one transaction); answers each group's
 * results by the names it gave them, typed as the statements answer, so no caller decodes by position.
 */
export async function namedBatches<S extends NamedStatements>(db: Db, groups: S[]): Promise<NamedResults<S>[]> {
  const results = await batchAll(db, groups.flatMap(statementsOf));
  let at = 0;
  const next = (count: number) => {
    at += count;
    return results.slice(at - count, at);
  };
  return groups.map(
    (group) =>
      Object.fromEntries(
        Object.entries(group).map(([name, statement]) => [
          name,
          Array.isArray(statement) ? next(statement.length) : next(1)[0],
        ]),
      ) as NamedResults<S>,
  );
}

/** One group of named statements in one D1 batch: each result by its name. */
export async function namedBatch<S extends NamedStatements>(db: Db, group: S): Promise<NamedResults<S>> {
  const [results] = await namedBatches(db, [group]);
  return results as NamedResults<S>;
}

/** A raw D1 statement that carries the type of its rows, for `namedD1Batch`. */
export type RowsOf<Row> = D1PreparedStatement & { readonly rowType?: Row };
export const rowsOf = <Row>(statement: D1PreparedStatement): RowsOf<Row> => statement;

/** Named raw D1 statements in one batch (one transaction); answers each one's result by its name. */
export async function namedD1Batch<S extends Record<string, RowsOf<unknown>>>(
  d1: D1Database,
  statements: S,
): Promise<{ [K in keyof S]: D1Result<S[K] extends RowsOf<infer Row> ? Row : never> }> {
  const names = Object.keys(statements);
  const results = await d1.batch(Object.values(statements));
  return Object.fromEntries(names.map((name, i) => [name, results[i]])) as {
    [K in keyof S]: D1Result<S[K] extends RowsOf<infer Row> ? Row : never>;
  };
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
