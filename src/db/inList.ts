import { type AnyColumn, inArray, type SQL, type SQLWrapper, sql } from "drizzle-orm";

/**
 * `column IN (…)` with the whole list bound as one JSON parameter, so a list of any length stays under
 * D1's limit of 100 bound parameters per statement.
 */
export const inList = (column: AnyColumn, values: readonly (number | string)[]): SQL =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;

/** `column IN` a list of ids, or the ids a query selects (a page, read in the same batch). */
export const inIds = (column: AnyColumn, ids: number[] | SQLWrapper): SQL =>
  Array.isArray(ids) ? inList(column, ids) : inArray(column, ids);
