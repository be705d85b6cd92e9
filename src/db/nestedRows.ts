import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { dialect } from "./client";

/**
 * Rows read as JSON arrays of their column values and decoded here, column by column as Drizzle would.
 * A page of ads and the rows of its child tables are then one statement (the page query runs once, instead
 * of once more per child table), and a row costs one value to Drizzle and D1 instead of one per column:
 * their per-column mapping was a fifth of a page's CPU.
 */
function tableCodec<TTable extends SQLiteTable>(table: TTable) {
  const columns = Object.entries(getTableColumns(table) as Record<string, SQLiteColumn>);
  const decode = (values: unknown[]): TTable["$inferSelect"] => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i += 1) {
      const [key, column] = columns[i] as [string, SQLiteColumn];
      const value = values[i];
      row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
    }
    return row as TTable["$inferSelect"];
  };
  return { columns: columns.map(([, column]) => column), decode };
}

/**
 * The SQL text of a fragment without parameters, rendered once: Drizzle renders a query chunk by chunk on
 * every request, and these fragments (every column of seven tables) were most of a page's rendering.
 */
function rendered(fragment: SQL): SQL {
  const { sql: text, params } = dialect.sqlToQuery(fragment);
  if (params.length > 0) throw new Error("a pre-rendered fragment cannot carry parameters");
  return sql.raw(text);
}

/** Decodes rows of `table` given as a JSON array of value arrays in the table's column order. */
export function rowsDecoder<TTable extends SQLiteTable>(table: TTable) {
  const { decode } = tableCodec(table);
  return (values: unknown[][]): TTable["$inferSelect"][] => values.map(decode);
}

/** A table's row of the query as one JSON value: select it, and the row arrives decoded. */
export function jsonRow<TTable extends SQLiteTable>(table: TTable): SQL<TTable["$inferSelect"]> {
  const { columns, decode } = tableCodec(table);
  return rendered(sql`json_array(${sql.join(columns, sql`, `)})`).mapWith((text: string) => decode(JSON.parse(text)));
}

/** The rows of `table` matching `where`, in `orderBy` order, as one JSON array of their value arrays (SQL). */
export function rowsAsJson(table: SQLiteTable, where: SQL, orderBy: SQLiteColumn[] = []): SQL<string> {
  const values = sql.join(
    Object.values(getTableColumns(table) as Record<string, SQLiteColumn>).map((column) => sql.identifier(column.name)),
    sql`, `,
  );
  const order = orderBy.length > 0 ? sql` ORDER BY ${sql.join(orderBy, sql`, `)}` : sql``;
  // json_group_array keeps the order of the rows it is fed, so the rows are ordered in a subquery.
  return sql`(SELECT json_group_array(json_array(${values})) FROM (SELECT * FROM ${table} WHERE ${where}${order}))`;
}

/**
 * A child table's rows matching `where` (which names the parent's columns) as one value of the parent's
 * row: a correlated subquery answering a JSON array of value arrays, decoded into the table's rows.
 */
export function nestedRows<TTable extends SQLiteTable>(
  table: TTable,
  where: SQL,
  orderBy: SQLiteColumn[] = [],
): SQL<TTable["$inferSelect"][]> {
  const { decode } = tableCodec(table);
  return rendered(rowsAsJson(table, where, orderBy)).mapWith((text: string) =>
    (JSON.parse(text) as unknown[][]).map(decode),
  );
}
