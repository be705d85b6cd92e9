import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../../../db/client";

/**
 * The funds rule, defined once for the write (`queueJobs`) and the dry run (`walkFunds`): a payer's
 * decisions are taken in the order given while its funds last; one the funds cannot cover is passed
 * over, and a cheaper one after it may still be taken; a free one is always taken.
 *
 * `table` has a row per decision with `idx` (its order), `payer_id`, `cost` and `funds` (the payer's
 * balance before the first). Answers two CTEs for a `WITH RECURSIVE`: `candidates` (the rows, numbered
 * per payer) and `walk` (per row: `taken`, and `left`, the funds after it).
 */
export const fundsWalk = (table: SQL) => sql`candidates AS (
 SELECT t.*, row_number() OVER (PARTITION BY t.payer_id ORDER BY t.idx) AS rn FROM ${table} t
 ),
 walk (payer_id, rn, idx, taken, left) AS (
 SELECT payer_id, rn, idx, cost = 0 OR cost <= funds, funds - (cost <= funds) * cost FROM candidates WHERE rn = 1
 UNION ALL
 SELECT c.payer_id, c.rn, c.idx, c.cost = 0 OR c.cost <= w.left, w.left - (c.cost <= w.left) * c.cost
 FROM candidates c JOIN walk w ON w.payer_id = c.payer_id AND c.rn = w.rn + 1
 )`;

/** The funds rule over costs in order, from `balance`: per cost whether it is taken and the funds before it. */
export interface FundsWalked {
  taken: boolean[];
  before: number[];
  left: number;
}

/** The dry run's walk: one payer's costs in order, from the balance the dry run holds (one query, no write). */
export async function walkFunds(db: Db, costs: number[], balance: number): Promise<FundsWalked> {
  if (costs.length === 0) return { taken: [], before: [], left: balance };
  const rows = await db.all<{ taken: number; left: number }>(sql`WITH RECURSIVE ${fundsWalk(sql`(SELECT
 CAST(j.key AS INTEGER) AS idx, 0 AS payer_id, CAST(j.value AS INTEGER) AS cost, ${balance} AS funds
 FROM json_each(${JSON.stringify(costs)}) j)`)}
 SELECT taken, left FROM walk ORDER BY idx`);
  const left = rows.map((row) => Number(row.left));
  return {
    taken: rows.map((row) => row.taken === 1),
    before: [balance, ...left.slice(0, -1)],
    left: left.at(-1) ?? balance,
  };
}
