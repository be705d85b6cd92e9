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

type Statement = BatchItem<"sqlite">;

/**
 * Named statements of one group: each name a statement, a list of statements (read as one list of
 * results), a nested group (read as its own named results), or undefined (nothing sent, undefined read).
 */
export interface NamedStatements {
  readonly [name: string]: Statement | readonly Statement[] | NamedStatements | undefined;
}
type ResultOf<T> = T extends Statement
  ? Awaited<T>
  : T extends readonly Statement[]
    ? Awaited<T[number]>[]
    : T extends NamedStatements
      ? NamedResults<T>
      : undefined;
/** Each name's result, typed as its statement answers. */
export type NamedResults<S extends NamedStatements> = { [K in keyof S]: ResultOf<S[K]> };

const isGroup = (value: unknown): value is NamedStatements =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/** A group's statements in the order of its names (what `namedBatches` sends). */
export const statementsOf = (group: NamedStatements): Statement[] =>
  Object.values(group).flatMap((entry) =>
    entry === undefined
      ? []
      : isGroup(entry)
        ? statementsOf(entry)
        : Array.isArray(entry)
          ? entry
          : [entry as Statement],
  );

/** A group's results by name, taken in order from `results` (the batch's, from `cursor.at` on). */
function resultsOf<S extends NamedStatements>(group: S, results: unknown[], cursor: { at: number }): NamedResults<S> {
  const take = (count: number) => {
    cursor.at += count;
    return results.slice(cursor.at - count, cursor.at);
  };
  return Object.fromEntries(
    Object.entries(group).map(([name, entry]) => [
      name,
      entry === undefined
        ? undefined
        : isGroup(entry)
          ? resultsOf(entry, results, cursor)
          : Array.isArray(entry)
            ? take(entry.length)
            : take(1)[0],
    ]),
  ) as NamedResults<S>;
}

/**
 * Groups of named statements in one D1 batch (one round trip, one transaction); answers each group's
 * results by the names it gave them, typed as the statements answer, so no caller decodes by position.
 */
export async function namedBatches<S extends NamedStatements>(db: Db, groups: S[]): Promise<NamedResults<S>[]> {
  const results = await batchAll(db, groups.flatMap(statementsOf));
  const cursor = { at: 0 };
  return groups.map((group) => resultsOf(group, results, cursor));
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
