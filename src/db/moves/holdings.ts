import { MOVED_TABLES, movedTable, ownedBy, quoted } from "./tables";

/**
 * How many rows of each moved table, and how many cents in its ledger, group `group` holds on a shard:
 * what a move's copy must equal on both sides (and be nothing on the old shard once confirmed).
 */
export async function groupHoldings(d1: D1Database, group: number): Promise<Record<string, number>> {
  const counts = await d1.batch<{ n: number }>([
    ...MOVED_TABLES.map((table) =>
      d1.prepare(`SELECT count(*) AS n FROM ${quoted(table.name)} t WHERE ${ownedBy(table, "t", group)}`),
    ),
    d1.prepare(
      `SELECT coalesce(sum(amount), 0) AS n FROM wallet_entries t WHERE ${ownedBy(movedTable("wallet_entries"), "t", group)}`,
    ),
  ]);
  const names = [...MOVED_TABLES.map((table) => table.name), "ledger cents"];
  return Object.fromEntries(names.map((name, at) => [name, counts[at]?.results[0]?.n ?? 0]));
}
