import { type AnyColumn, type SQL, sql } from "drizzle-orm";

/**
 * An order that takes rows by turns of `owner` (a client): each owner's first row, then each owner's
 * second, and so on, `within` ordering an owner's own rows. Shared lanes (due tasks, the update outbox)
 * take a limited number of rows a run in this order, so one client's volume delays only its own rows.
 */
export const byTurns = (owner: AnyColumn, within: AnyColumn): SQL[] => [
  sql`row_number() over (partition by ${owner} order by ${within})`,
  sql`${within}`,
];
