import { sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";

/**
 * An upsert's condition to update: some of `columns` differs from the row offered (`excluded`). A row sent
 * again unchanged (a dealer's sync re-sends its whole stock; a statistics pull, the same day's numbers) is
 * then left alone, and D1 counts no row written for it, where an update to the same values still rewrites
 * the row and its index entries.
 */
export const changedFrom = (...columns: SQLiteColumn[]) =>
  sql.join(
    columns.map((column) => sql`${column} IS NOT excluded.${sql.identifier(column.name)}`),
    sql` OR `,
  );
