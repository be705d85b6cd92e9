import { getTableColumns } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

/** D1 binds at most 100 parameters per statement. */
export const D1_MAX_BOUND_PARAMETERS = 100;

/**
 * The rows of a multi-row insert into `table`, in chunks whose statements stay under D1's limit of bound
 * parameters (sized for every column of the table, whether a row names it or not). Each chunk becomes
 * one statement of the same batch; every multi-row insert goes through here.
 */
export function rowChunks<Row>(table: SQLiteTable, rows: Row[]): Row[][] {
  const perStatement = Math.max(1, Math.floor(D1_MAX_BOUND_PARAMETERS / Object.keys(getTableColumns(table)).length));
  const chunks: Row[][] = [];
  for (let i = 0; i < rows.length; i += perStatement) chunks.push(rows.slice(i, i + perStatement));
  return chunks;
}
