/**
 * Step 3 of a move: the keys the source's triggers logged are read again on the source and written (or
 * deleted) on the target, round after round, while the group's clients write on.
 */
import type { MoveShards } from "./progress";
import {
  type Columns,
  deleteKeys,
  MOVED_TABLES,
  type MovedTable,
  moveBatch,
  PAGE,
  quoted,
  type Row,
  upsert,
} from "./tables";

/**
 * One round of the catch-up: the next logged keys, read again on the source and written to the target.
 * Answers the last entry caught up, how many keys, and the queries it made (a batch is one).
 */
export async function catchUp(
  { source, target }: Pick<MoveShards, "source" | "target">,
  group: number,
  columnsOf: (table: MovedTable) => Columns,
  after: number,
): Promise<{ seq: number; keys: number; queries: number }> {
  const { results: logged } = await source
    .prepare(
      `SELECT seq, table_name AS tableName, row_key AS rowKey FROM move_log WHERE group_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ${PAGE}`,
    )
    .bind(group, after)
    .all<{ seq: number; tableName: string; rowKey: string }>();
  if (logged.length === 0) return { seq: after, keys: 0, queries: 1 };
  const keysOf = new Map<string, Map<string, unknown[]>>();
  for (const entry of logged) {
    const keys = keysOf.get(entry.tableName) ?? new Map<string, unknown[]>();
    keys.set(entry.rowKey, JSON.parse(entry.rowKey) as unknown[]);
    keysOf.set(entry.tableName, keys);
  }
  // The rows as they are now, read in one batch (one snapshot of the source), parents first.
  const tables = MOVED_TABLES.filter((table) => keysOf.has(table.name));
  const reads = await source.batch<Row>(
    tables.map((table) => {
      const { key } = columnsOf(table);
      const join = key.map((column, at) => `t.${quoted(column)} = k.value ->> ${at}`).join(" AND ");
      return source
        .prepare(`SELECT t.* FROM json_each(?1) k JOIN ${quoted(table.name)} t ON ${join}`)
        .bind(JSON.stringify([...(keysOf.get(table.name) as Map<string, unknown[]>).values()]));
    }),
  );
  const writes: D1PreparedStatement[] = [];
  const deletes: D1PreparedStatement[] = [];
  tables.forEach((table, at) => {
    const columns = columnsOf(table);
    const rows = reads[at]?.results ?? [];
    const found = new Set(rows.map((row) => JSON.stringify(columns.key.map((column) => row[column]))));
    const gone = [...(keysOf.get(table.name) as Map<string, unknown[]>).values()].filter(
      (key) => !found.has(JSON.stringify(key)),
    );
    if (rows.length > 0) writes.push(upsert(target, table, columns, rows));
    if (gone.length > 0) deletes.push(deleteKeys(target, table, columns, gone));
  });
  // Children's deletes first, then parents' writes first: what the source holds, in one transaction.
  await moveBatch(target, group, [...deletes.reverse(), ...writes]);
  return { seq: logged.at(-1)?.seq as number, keys: logged.length, queries: 3 };
}

/** Rounds of the catch-up until one finds nothing: what the fenced source holds, all on the target. */
export async function catchUpAll(
  shards: Pick<MoveShards, "source" | "target">,
  group: number,
  columnsOf: (table: MovedTable) => Columns,
  after: number,
): Promise<{ seq: number; keys: number }> {
  let seq = after;
  let keys = 0;
  for (;;) {
    const round = await catchUp(shards, group, columnsOf, seq);
    seq = round.seq;
    keys += round.keys;
    if (round.keys === 0) return { seq, keys };
  }
}
