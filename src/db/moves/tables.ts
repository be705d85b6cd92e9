/**
 * What every step of a move works with: the tables a group owns (declared beside their schemas,
 * src/db/ownership.ts), which of their rows are the group's, as SQL, and the triggers and writes a move
 * puts on a shard.
 */
import { ID_BLOCK_SIZE } from "../ids";
import { type GroupTable, groupTables } from "../ownership";

export type MovedTable = GroupTable;

/** The tables of a group's rows, parents first. */
export const MOVED_TABLES: MovedTable[] = groupTables();

export const movedTable = (name: string) => MOVED_TABLES.find((table) => table.name === name) as MovedTable;

/** What a write to a row of a group that is switching shards fails with (the source's triggers raise it). */
export const GROUP_MOVING = "group_moving";

/** Rows per page of the copy and keys per round of the catch-up. */
export const PAGE = 500;

const SIZE = ID_BLOCK_SIZE;
export const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Whether the row `row` (a table alias, or NEW/OLD in a trigger) is group `group`'s, as SQL. */
export function ownedBy(table: MovedTable, row: string, group: number): string {
  const { by } = table.owner;
  const inBlocks = (value: string, kind: string) =>
    `(${value}) / ${SIZE} IN (SELECT block FROM id_blocks WHERE kind = '${kind}' AND group_id = ${group})`;
  const ofClient = (value: string) => `(${value}) IN (SELECT id FROM api_clients WHERE group_id = ${group})`;
  if (by === "revision") {
    const scope = `${row}.scope`;
    const idAfter = (prefix: string) => `CAST(substr(${scope}, ${prefix.length + 1}) AS INTEGER)`;
    return `((${scope} LIKE 'user:%' AND ${inBlocks(idAfter("user:"), "users")})
      OR (${scope} LIKE 'webhook:%' AND ${inBlocks(idAfter("webhook:"), "webhook_endpoints")})
      OR (${scope} LIKE 'client:%' AND ${ofClient(idAfter("client:"))}))`;
  }
  if ("client" in by) return `${ofClient(`${row}.${by.client}`)}`;
  return inBlocks(`${row}.${by.column}`, by.kind);
}

export interface Columns {
  all: string[];
  key: string[];
}

/** A table's columns and primary key, as the source's schema has them (every shard has the same). */
/** A table's columns as `PRAGMA table_info` lists them: all, and its primary key's in order. */
function columnsFrom(table: string, results: { name: string; pk: number }[]): Columns {
  const key = results
    .filter((column) => column.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((column) => column.name);
  if (key.length === 0) throw new Error(`${table} has no primary key to move its rows by`);
  return { all: results.map((column) => column.name), key };
}

const tableInfo = (d1: D1Database, table: string) => d1.prepare(`PRAGMA table_info(${quoted(table)})`);

export async function columnsOf(d1: D1Database, table: string): Promise<Columns> {
  return columnsFrom(table, (await tableInfo(d1, table).all<{ name: string; pk: number }>()).results);
}

/** Every moved table's columns, by table: one batch (one query of a step's budget). */
export async function columnsOfEveryTable(d1: D1Database): Promise<(table: MovedTable) => Columns> {
  const infos = await d1.batch<{ name: string; pk: number }>(MOVED_TABLES.map((t) => tableInfo(d1, t.name)));
  const columns = new Map(MOVED_TABLES.map((t, at) => [t.name, columnsFrom(t.name, infos[at]?.results ?? [])]));
  return (table) => columns.get(table.name) as Columns;
}

type TriggerPurpose = "log" | "fence" | "guard";
const triggerName = (group: number, purpose: TriggerPurpose, table: string, op: string) =>
  quoted(`move_${group}_${purpose}_${table}_${op}`);
const OPERATIONS = [
  { op: "insert", rows: ["NEW"] },
  { op: "update", rows: ["NEW", "OLD"] },
  { op: "delete", rows: ["OLD"] },
] as const;

/** The triggers that log the group's changed rows on the source. */
export function logTriggers(group: number, columnsOf: (table: MovedTable) => Columns): string[] {
  return MOVED_TABLES.flatMap((table) =>
    OPERATIONS.map(({ op, rows }) => {
      const inserts = rows
        .map(
          (row) =>
            `INSERT INTO move_log (group_id, table_name, row_key) SELECT ${group}, '${table.name}', json_array(${columnsOf(
              table,
            )
              .key.map((column) => `${row}.${column}`)
              .join(", ")}) WHERE ${ownedBy(table, row, group)};`,
        )
        .join(" ");
      return `CREATE TRIGGER IF NOT EXISTS ${triggerName(group, "log", table.name, op)} AFTER ${op.toUpperCase()} ON ${quoted(table.name)} BEGIN ${inserts} END`;
    }),
  );
}

/**
 * The triggers that keep every other writer off the group's rows:
 * - on the source at the switch (`fence`), refusing the write (the API answers 503 `group_moving`);
 * - on the target from the start until the switch (`guard`), but for the move's own batches (`moveBatch`),
 *   skipping the write: the target's cron changes nothing of a copy (which the catch-up would not bring
 *   back), and a statement of it that also touches other clients' rows still changes theirs.
 */
export function refusingTriggers(group: number, purpose: "fence" | "guard"): string[] {
  const exceptMove = purpose === "guard" ? `NOT EXISTS (SELECT 1 FROM move_writes WHERE group_id = ${group}) AND ` : "";
  const refusal = purpose === "guard" ? "RAISE(IGNORE)" : `RAISE(ABORT, '${GROUP_MOVING}')`;
  return MOVED_TABLES.flatMap((table) =>
    OPERATIONS.map(
      ({ op, rows }) =>
        `CREATE TRIGGER IF NOT EXISTS ${triggerName(group, purpose, table.name, op)} BEFORE ${op.toUpperCase()} ON ${quoted(table.name)}
       WHEN ${exceptMove}(${rows.map((row) => ownedBy(table, row, group)).join(" OR ")}) BEGIN SELECT ${refusal}; END`,
    ),
  );
}

export const dropTriggers = (group: number, ...purposes: TriggerPurpose[]) =>
  purposes.flatMap((purpose) =>
    MOVED_TABLES.flatMap((table) =>
      OPERATIONS.map(({ op }) => `DROP TRIGGER IF EXISTS ${triggerName(group, purpose, table.name, op)}`),
    ),
  );

/** Runs DDL statements on a shard in one batch, with the statements that go with them (`along`). */
export const runDdl = (d1: D1Database, statements: string[], along: D1PreparedStatement[] = []) =>
  d1.batch([...statements.map((statement) => d1.prepare(statement)), ...along]);

/**
 * Marks (or clears) a group's copy on a shard as moving (`client_groups.moving_to`): that shard's scheduled
 * work leaves the group's rows (`settledClient`, src/db/directory.ts), which are the copy a move is filling
 * (the target until the switch) or rows it has fenced (the source from the switch until they are dropped).
 */
export const markMoving = (d1: D1Database, group: number, to: number | null) =>
  d1.prepare("UPDATE client_groups SET moving_to = ?2 WHERE id = ?1").bind(group, to);

/** Statements in one batch of the move's own on the target: the group's guard triggers let them through. */
export function moveBatch(target: D1Database, group: number, statements: D1PreparedStatement[]) {
  return target.batch([
    target.prepare("INSERT INTO move_writes (group_id) VALUES (?1) ON CONFLICT DO NOTHING").bind(group),
    ...statements,
    target.prepare("DELETE FROM move_writes WHERE group_id = ?1").bind(group),
  ]);
}

export type Row = Record<string, unknown>;

/**
 * Writes source rows to the target: an upsert by the primary key (a negative id for a renumbered log),
 * skipping a row whose moved parent is not on the target yet (the change log brings it again).
 */
export function upsert(target: D1Database, table: MovedTable, columns: Columns, rows: Row[]): D1PreparedStatement {
  const value = (column: string) => `j.value ->> '$.${column}'`;
  const renumbered = table.owner.renumbered;
  const select = columns.all.map((column) =>
    renumbered && column === "id"
      ? `-(${value("id")})`
      : renumbered && column === "origin_id"
        ? value("id")
        : value(column),
  );
  const guards = Object.entries(table.owner.parents ?? {}).map(
    ([column, parent]) =>
      `(${value(column)} IS NULL OR EXISTS (SELECT 1 FROM ${quoted(parent)} p WHERE p.id = ${value(column)}))`,
  );
  const updates = columns.all
    .filter((column) => !columns.key.includes(column))
    .map((column) => `${quoted(column)} = excluded.${quoted(column)}`);
  return target
    .prepare(
      `INSERT INTO ${quoted(table.name)} (${columns.all.map(quoted).join(", ")})
       SELECT ${select.join(", ")} FROM json_each(?1) j WHERE ${guards.join(" AND ") || "1"}
       ON CONFLICT (${columns.key.map(quoted).join(", ")}) DO ${updates.length > 0 ? `UPDATE SET ${updates.join(", ")}` : "NOTHING"}`,
    )
    .bind(JSON.stringify(rows));
}

/** Deletes on the target the rows of these keys (negated ids for a renumbered log). */
export function deleteKeys(
  target: D1Database,
  table: MovedTable,
  columns: Columns,
  keys: unknown[][],
): D1PreparedStatement {
  const parts = columns.key.map((_, at) => (table.owner.renumbered ? `-(k.value ->> ${at})` : `k.value ->> ${at}`));
  return target
    .prepare(
      `DELETE FROM ${quoted(table.name)} WHERE (${columns.key.map(quoted).join(", ")}) IN (SELECT ${parts.join(", ")} FROM json_each(?1) k)`,
    )
    .bind(JSON.stringify(keys));
}
