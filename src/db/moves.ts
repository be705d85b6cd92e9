/**
 * Moving a client group from one shard to another while its clients work (issue 56).
 *
 * 1. **Start** (`beginMove`). The directory marks the group `moving_to` (its clients are then cached for a
 *    second only, src/middleware/auth.ts) and keeps the move's progress. Its first step gives the target
 *    the group's clients and id blocks (`copyGroup`) and triggers that keep every writer but the move off
 *    the group's rows there (`guard`), and the source triggers that write the key of every row of the
 *    group that changes to `move_log`.
 * 2. **Copy.** Each table's rows of the group go to the target in pages, parents before children; a row
 *    whose parent is not there yet was written after its parent's page, so the log has it.
 * 3. **Catch up.** The logged keys are read again on the source and written (or deleted) on the target,
 *    round after round, while writes go on.
 * 4. **Switch.** Triggers on the source refuse every write to the group's rows (`group_moving`: the API
 *    answers 503 with Retry-After, a job's message is retried); the last changes are caught up; the
 *    group's events and webhook deliveries get the target's ids; the directory names the target. Writes
 *    pause for this step only. The group's open jobs run on the target (src/jobs/execute.ts).
 * 5. **Confirm**, once no isolate can still route to the source (`confirmMove`): the source's rows of the
 *    group, its triggers and its log go.
 *
 * Steps 2 to 4 run in steps of a budget (`advanceMove`: the move's request, then the cron each minute),
 * each keeping the progress in the directory, one runner at a time: a runner that dies leaves the move
 * where its last finished part did, and the next resumes it there. Every part can run twice: the copy and
 * the catch-up write what the source holds, and the numbering of the logs is fixed before it is done.
 *
 * Events and webhook deliveries keep their shard's own ids (their feed's cursor), so they are copied with
 * negative ids (minus their id on the source), which no cursor reaches, and numbered at the switch past
 * every id either shard handed out, in their order. An event keeps its source id as `origin_id`: a cursor
 * below the group's `events_from` was handed out by the source, and is read through it (`movedCursor`).
 * The tallies, the search index and the ads' details are not copied: the target's triggers build them.
 * Nor are webhook leases (a delivery's slot, a few seconds long): they go with their endpoints.
 */
import { type SQL, sql } from "drizzle-orm";
import { copyGroup } from "./directory";
import { ID_BLOCK_SIZE } from "./ids";

/** How a table's row names its group. */
type Owner =
  /** The column holds an id of a block of `kind` (src/db/ids.ts). */
  | { column: string; kind: string }
  /** The column holds a client's id. */
  | { client: string }
  /** The revision keys of the response cache: `user:<id>`, `client:<id>`, `webhook:<id>`. */
  | "revision";

interface MovedTable {
  name: string;
  owner: Owner;
  /** Columns naming a row of another moved table (always by its `id`), which must be there first. */
  parents?: Record<string, string>;
  /** A log with the shard's own ids: copied with negative ids, numbered at the switch. */
  renumbered?: true;
}

const byUser = { user_id: "users" };
const byAd = { ad_id: "ads" };
const ownAd = { column: "ad_id", kind: "ads" };
const ownUser = { column: "user_id", kind: "users" };
const ownId = (kind: string) => ({ column: "id", kind });

/** The tables of a group's rows, parents first. */
export const MOVED_TABLES: MovedTable[] = [
  { name: "users", owner: ownId("users") },
  {
    name: "user_settings",
    owner: ownUser,
    parents: { user_id: "users", wallet_user_id: "users", main_user_id: "users" },
  },
  { name: "user_ad_settings", owner: ownUser, parents: byUser },
  { name: "contacts", owner: ownId("contacts"), parents: byUser },
  { name: "folders", owner: ownId("folders"), parents: byUser },
  { name: "manufacturers", owner: ownId("manufacturers"), parents: byUser },
  {
    name: "ads",
    owner: ownId("ads"),
    parents: { user_id: "users", folder_id: "folders", contact_id: "contacts", manufacturer_id: "manufacturers" },
  },
  { name: "ad_attributes", owner: ownAd, parents: byAd },
  { name: "ad_settings", owner: ownAd, parents: byAd },
  { name: "ad_images", owner: ownId("ad_images"), parents: byAd },
  { name: "image_jobs", owner: ownId("image_jobs"), parents: byAd },
  { name: "bids", owner: ownId("bids"), parents: byAd },
  { name: "ad_statistics", owner: ownAd, parents: byAd },
  { name: "ad_publications", owner: ownAd },
  { name: "ad_update_requests", owner: ownId("ad_update_requests"), parents: byAd },
  { name: "ad_features", owner: ownAd, parents: byAd },
  { name: "portal_connections", owner: ownUser, parents: byUser },
  { name: "queue_items", owner: ownId("queue_items") },
  { name: "wallet_entries", owner: ownId("wallet_entries"), parents: byUser },
  { name: "tasks", owner: ownId("tasks"), parents: byUser },
  { name: "task_runs", owner: ownId("task_runs"), parents: { task_id: "tasks" } },
  { name: "notifications", owner: ownId("notifications"), parents: byUser },
  { name: "webhook_endpoints", owner: ownId("webhook_endpoints") },
  {
    name: "webhook_deliveries",
    owner: { column: "endpoint_id", kind: "webhook_endpoints" },
    parents: { endpoint_id: "webhook_endpoints" },
    renumbered: true,
  },
  { name: "events", owner: { client: "client_id" }, renumbered: true },
  { name: "idempotency_keys", owner: { client: "client_id" } },
  { name: "cache_revisions", owner: "revision" },
];

const movedTable = (name: string) => MOVED_TABLES.find((table) => table.name === name) as MovedTable;

/** What a write to a row of a group that is switching shards fails with (the source's triggers raise it). */
export const GROUP_MOVING = "group_moving";

/** Rows per page of the copy and keys per round of the catch-up. */
const PAGE = 500;

const SIZE = ID_BLOCK_SIZE;
const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Whether the row `row` (a table alias, or NEW/OLD in a trigger) is group `group`'s, as SQL. */
function ownedBy(table: MovedTable, row: string, group: number): string {
  const { owner } = table;
  const inBlocks = (value: string, kind: string) =>
    `(${value}) / ${SIZE} IN (SELECT block FROM id_blocks WHERE kind = '${kind}' AND group_id = ${group})`;
  const ofClient = (value: string) => `(${value}) IN (SELECT id FROM api_clients WHERE group_id = ${group})`;
  if (owner === "revision") {
    const scope = `${row}.scope`;
    const idAfter = (prefix: string) => `CAST(substr(${scope}, ${prefix.length + 1}) AS INTEGER)`;
    return `((${scope} LIKE 'user:%' AND ${inBlocks(idAfter("user:"), "users")})
      OR (${scope} LIKE 'webhook:%' AND ${inBlocks(idAfter("webhook:"), "webhook_endpoints")})
      OR (${scope} LIKE 'client:%' AND ${ofClient(idAfter("client:"))}))`;
  }
  if ("client" in owner) return `${ofClient(`${row}.${owner.client}`)}`;
  return inBlocks(`${row}.${owner.column}`, owner.kind);
}

interface Columns {
  all: string[];
  key: string[];
}

/** A table's columns and primary key, as the source's schema has them (every shard has the same). */
async function columnsOf(d1: D1Database, table: string): Promise<Columns> {
  const { results } = await d1.prepare(`PRAGMA table_info(${quoted(table)})`).all<{ name: string; pk: number }>();
  const key = results
    .filter((column) => column.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((column) => column.name);
  if (key.length === 0) throw new Error(`${table} has no primary key to move its rows by`);
  return { all: results.map((column) => column.name), key };
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
function logTriggers(group: number, table: MovedTable, columns: Columns): string[] {
  return OPERATIONS.map(({ op, rows }) => {
    const inserts = rows
      .map(
        (row) =>
          `INSERT INTO move_log (group_id, table_name, row_key) SELECT ${group}, '${table.name}', json_array(${columns.key
            .map((column) => `${row}.${column}`)
            .join(", ")}) WHERE ${ownedBy(table, row, group)};`,
      )
      .join(" ");
    return `CREATE TRIGGER IF NOT EXISTS ${triggerName(group, "log", table.name, op)} AFTER ${op.toUpperCase()} ON ${quoted(table.name)} BEGIN ${inserts} END`;
  });
}

/**
 * The triggers that keep every other writer off the group's rows:
 * - on the source at the switch (`fence`), refusing the write (the API answers 503 `group_moving`);
 * - on the target from the start until the switch (`guard`), but for the move's own batches (`moveBatch`),
 *   skipping the write: the target's cron changes nothing of a copy (which the catch-up would not bring
 *   back), and a statement of it that also touches other clients' rows still changes theirs.
 */
function refusingTriggers(group: number, table: MovedTable, purpose: "fence" | "guard"): string[] {
  const exceptMove = purpose === "guard" ? `NOT EXISTS (SELECT 1 FROM move_writes WHERE group_id = ${group}) AND ` : "";
  const refusal = purpose === "guard" ? "RAISE(IGNORE)" : `RAISE(ABORT, '${GROUP_MOVING}')`;
  return OPERATIONS.map(
    ({ op, rows }) =>
      `CREATE TRIGGER IF NOT EXISTS ${triggerName(group, purpose, table.name, op)} BEFORE ${op.toUpperCase()} ON ${quoted(table.name)}
       WHEN ${exceptMove}(${rows.map((row) => ownedBy(table, row, group)).join(" OR ")}) BEGIN SELECT ${refusal}; END`,
  );
}

/** Statements in one batch of the move's own on the target: the group's guard triggers let them through. */
function moveBatch(target: D1Database, group: number, statements: D1PreparedStatement[]) {
  return target.batch([
    target.prepare("INSERT INTO move_writes (group_id) VALUES (?1) ON CONFLICT DO NOTHING").bind(group),
    ...statements,
    target.prepare("DELETE FROM move_writes WHERE group_id = ?1").bind(group),
  ]);
}

const dropTriggers = (group: number, purpose: TriggerPurpose) =>
  MOVED_TABLES.flatMap((table) =>
    OPERATIONS.map(({ op }) => `DROP TRIGGER IF EXISTS ${triggerName(group, purpose, table.name, op)}`),
  );

type Row = Record<string, unknown>;

/**
 * Writes source rows to the target: an upsert by the primary key (a negative id for a renumbered log),
 * skipping a row whose moved parent is not on the target yet (the change log brings it again).
 */
function upsert(target: D1Database, table: MovedTable, columns: Columns, rows: Row[]): D1PreparedStatement {
  const value = (column: string) => `j.value ->> '$.${column}'`;
  const select = columns.all.map((column) =>
    table.renumbered && column === "id"
      ? `-(${value("id")})`
      : table.renumbered && column === "origin_id"
        ? value("id")
        : value(column),
  );
  const guards = Object.entries(table.parents ?? {}).map(
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
function deleteKeys(target: D1Database, table: MovedTable, columns: Columns, keys: unknown[][]): D1PreparedStatement {
  const parts = columns.key.map((_, at) => (table.renumbered ? `-(k.value ->> ${at})` : `k.value ->> ${at}`));
  return target
    .prepare(
      `DELETE FROM ${quoted(table.name)} WHERE (${columns.key.map(quoted).join(", ")}) IN (SELECT ${parts.join(", ")} FROM json_each(?1) k)`,
    )
    .bind(JSON.stringify(keys));
}

/** A move's figures so far. */
export interface MoveFigures {
  group: number;
  from: number;
  to: number;
  /** Rows copied in the copy step, and per table. */
  copied: number;
  copiedPerTable: Record<string, number>;
  copyMs: number;
  /** Keys caught up, and rounds, before the switch. */
  caughtUp: number;
  rounds: number;
}

/** Where a move stands: still moving, or on the target (where `/confirm` finds it). */
export interface MoveState extends MoveFigures {
  state: "moving" | "moved";
  /** Once moved: how long writes to the group were refused. */
  pauseMs: number | null;
  /** Once moved: the group's first event id on the target. */
  eventsFrom: number | null;
}

/**
 * Where a move stands between its steps, kept in the directory (`client_groups.move_progress`), so that
 * any runner resumes it where the last step ended: a step that fails leaves it as the step before did.
 */
interface MoveProgress extends MoveFigures {
  /** When it began (ms): an isolate may route by what it read of the directory before, for `settleMs`. */
  startedAt: number;
  /** The target has the group's clients, and the source the triggers that log its changes. */
  prepared: boolean;
  /** The copy's next table (an index of MOVED_TABLES; past the last once all are copied), and rowid. */
  table: number;
  after: number;
  /** The change log's last entry caught up. */
  seq: number;
  /** When writes were fenced (set just before), and the ids the group's logs get, fixed once caught up. */
  fencedAt: number | null;
  numbering: { eventsFrom: number; deliveriesFrom: number } | null;
  /** Once on the target: how long writes waited, and when the directory named the target (ms). */
  pauseMs: number | null;
  switchedAt: number | null;
  /** Who runs the move's step now, until when: one runner at a time. */
  lease: { runner: string; until: number } | null;
}

export interface MoveShards {
  directory: D1Database;
  source: D1Database;
  target: D1Database;
}

/** How long past its budget a step's lease holds, before another runner may take the move over. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Starts moving group `group` from shard `from` to shard `to` (step 1 above): the directory marks it moving
 * and keeps its progress. `advanceMove` then does the work; answers false if it is not on `from`, or moving.
 */
export async function beginMove(
  directory: D1Database,
  input: { group: number; from: number; to: number },
): Promise<boolean> {
  const { group, from, to } = input;
  const progress: MoveProgress = {
    group,
    from,
    to,
    copied: 0,
    copiedPerTable: {},
    copyMs: 0,
    caughtUp: 0,
    rounds: 0,
    startedAt: Date.now(),
    prepared: false,
    table: 0,
    after: Number.MIN_SAFE_INTEGER,
    seq: 0,
    fencedAt: null,
    numbering: null,
    pauseMs: null,
    switchedAt: null,
    lease: null,
  };
  const started = await directory
    .prepare(
      "UPDATE client_groups SET moving_to = ?2, move_progress = ?4 WHERE id = ?1 AND shard = ?3 AND moving_to IS NULL",
    )
    .bind(group, to, from, JSON.stringify(progress))
    .run();
  return Boolean(started.meta.changes);
}

/** The groups a move switched over `olderThanMs` ago and nobody confirmed yet (the cron confirms them). */
export async function switchedMoves(directory: D1Database, olderThanMs: number): Promise<number[]> {
  const { results } = await directory
    .prepare(
      "SELECT id FROM client_groups WHERE moving_to IS NULL AND move_progress ->> '$.switchedAt' <= ?1 ORDER BY id",
    )
    .bind(Date.now() - olderThanMs)
    .all<{ id: number }>();
  return results.map((row) => row.id);
}

/** Where group `group`'s move stands, or null when it has none since its last confirmed one. */
export async function moveState(directory: D1Database, group: number): Promise<MoveState | null> {
  const row = await directory
    .prepare("SELECT move_progress AS progress FROM client_groups WHERE id = ?1")
    .bind(group)
    .first<{ progress: string | null }>();
  return row?.progress ? stateOf(JSON.parse(row.progress) as MoveProgress) : null;
}

function stateOf(progress: MoveProgress): MoveState {
  const { group, from, to, copied, copiedPerTable, copyMs, caughtUp, rounds, pauseMs, numbering } = progress;
  const figures = { group, from, to, copied, copiedPerTable, copyMs, caughtUp, rounds };
  return pauseMs !== null && numbering
    ? { ...figures, state: "moved", pauseMs, eventsFrom: numbering.eventsFrom }
    : { ...figures, state: "moving", pauseMs: null, eventsFrom: null };
}

/**
 * Runs group `group`'s move on (steps 2 to 4 above) for about `budgetMs`, then keeps its progress and
 * answers where it stands, and whether this call switched it. The switch, once begun, runs to its end
 * whatever the budget: writes wait for it only. One runner at a time holds the move (another's call answers
 * where it stands and does nothing); one that fails leaves the move where its last finished part left it,
 * for the next to resume.
 */
export async function advanceMove(
  shards: MoveShards,
  group: number,
  options: {
    /** How long an isolate may route by what it read of the directory before the move began. */
    settleMs: number;
    budgetMs: number;
  },
): Promise<{ state: MoveState | null; switched: boolean }> {
  const { directory, source, target } = shards;
  const runner = crypto.randomUUID();
  const deadline = Date.now() + options.budgetMs;
  const claimed = await directory
    .prepare(
      `UPDATE client_groups SET move_progress = json_set(move_progress, '$.lease', json(?2))
       WHERE id = ?1 AND moving_to IS NOT NULL AND coalesce(move_progress ->> '$.lease.until', 0) < ?3
       RETURNING move_progress AS progress`,
    )
    .bind(group, JSON.stringify({ runner, until: deadline + LEASE_MARGIN_MS }), Date.now())
    .first<{ progress: string }>();
  if (!claimed) return { state: await moveState(directory, group), switched: false };
  const progress = JSON.parse(claimed.progress) as MoveProgress;
  /** Keeps the progress, while this runner holds the move (`release`: and lets it go). */
  const save = async (release = false) => {
    const kept = { ...progress, lease: release ? null : progress.lease };
    const { meta } = await directory
      .prepare("UPDATE client_groups SET move_progress = ?2 WHERE id = ?1 AND move_progress ->> '$.lease.runner' = ?3")
      .bind(group, JSON.stringify(kept), runner)
      .run();
    if (!meta.changes) throw new Error(`group ${group}: another runner took the move over`);
  };
  const pause = async () => {
    await save(true);
    return { state: stateOf(progress), switched: false };
  };
  try {
    const columns = new Map(
      await Promise.all(MOVED_TABLES.map(async (t) => [t.name, await columnsOf(source, t.name)] as const)),
    );
    const columnsOfTable = (table: MovedTable) => columns.get(table.name) as Columns;
    if (!progress.numbering) {
      if (!progress.prepared) {
        await copyGroup(directory, target, group);
        await target.batch(
          MOVED_TABLES.flatMap((table) => refusingTriggers(group, table, "guard")).map((ddl) => target.prepare(ddl)),
        );
        await source.batch(
          MOVED_TABLES.flatMap((table) => logTriggers(group, table, columnsOfTable(table))).map((ddl) =>
            source.prepare(ddl),
          ),
        );
        progress.prepared = true;
      }
      // 2. Copy, table by table, in pages by rowid: at least a page a step.
      const copyStart = Date.now();
      while (progress.table < MOVED_TABLES.length) {
        const table = MOVED_TABLES[progress.table] as MovedTable;
        const { results } = await source
          .prepare(
            `SELECT rowid AS move_rowid, * FROM ${quoted(table.name)} t WHERE rowid > ?1 AND ${ownedBy(table, "t", group)} ORDER BY rowid LIMIT ${PAGE}`,
          )
          .bind(progress.after)
          .all<Row & { move_rowid: number }>();
        if (results.length > 0) {
          await moveBatch(target, group, [upsert(target, table, columnsOfTable(table), results.map(withoutRowid))]);
          progress.after = results.at(-1)?.move_rowid as number;
          progress.copied += results.length;
          progress.copiedPerTable[table.name] = (progress.copiedPerTable[table.name] ?? 0) + results.length;
        }
        if (results.length < PAGE) {
          progress.table += 1;
          progress.after = Number.MIN_SAFE_INTEGER;
        }
        if (Date.now() >= deadline) break;
      }
      progress.copyMs += Date.now() - copyStart;
      if (progress.table < MOVED_TABLES.length) return await pause();

      // 3. Catch up while writes go on, until a round finds little to do and every isolate reads the
      // directory again within a second (what it read before the move began is at most `settleMs` old).
      for (;;) {
        const round = await catchUp(shards, group, columnsOfTable, progress.seq);
        progress.seq = round.seq;
        progress.caughtUp += round.keys;
        progress.rounds += 1;
        const settled = round.keys < PAGE / 5 && Date.now() >= progress.startedAt + options.settleMs;
        if (settled) break;
        if (Date.now() >= deadline) return await pause();
        if (round.keys < PAGE / 5) await new Promise((resolve) => setTimeout(resolve, 100));
      }

      // 4. The switch: writes refused from here, the last changes caught up, the logs' ids fixed.
      progress.fencedAt ??= Date.now();
      await save();
      await source.batch(
        MOVED_TABLES.flatMap((table) => refusingTriggers(group, table, "fence")).map((ddl) => source.prepare(ddl)),
      );
      for (;;) {
        const round = await catchUp(shards, group, columnsOfTable, progress.seq);
        progress.seq = round.seq;
        progress.caughtUp += round.keys;
        if (round.keys === 0) break;
      }
      progress.numbering = await numberingPast(shards);
      await save();
    }
    const { eventsFrom } = progress.numbering;
    await numberMovedLogs(shards, group, progress.numbering);
    // The target holds what the fenced source holds: from here on it is the group's.
    await target.batch(dropTriggers(group, "guard").map((ddl) => target.prepare(ddl)));
    const switchedAt = Date.now();
    const moved: MoveProgress = {
      ...progress,
      pauseMs: switchedAt - (progress.fencedAt ?? switchedAt),
      switchedAt,
      lease: null,
    };
    const switched = await directory
      .prepare(
        `UPDATE client_groups SET shard = ?2, moving_to = NULL, events_from = ?3, move_progress = ?4
         WHERE id = ?1 AND moving_to = ?2 AND move_progress ->> '$.lease.runner' = ?5`,
      )
      .bind(group, progress.to, eventsFrom, JSON.stringify(moved), runner)
      .run();
    if (!switched.meta.changes) throw new Error(`group ${group}: another runner took the move over`);
    progress.pauseMs = moved.pauseMs;
    await copyGroup(directory, target, group);
    await source.prepare("UPDATE client_groups SET shard = ?2 WHERE id = ?1").bind(group, progress.to).run();
    await source.batch(dropTriggers(group, "log").map((ddl) => source.prepare(ddl)));
    return { state: stateOf(progress), switched: true };
  } catch (error) {
    // What this step finished is kept, and the move is free for the next runner at once.
    await save(true).catch(() => undefined);
    throw error;
  }
}

const withoutRowid = ({ move_rowid: _, ...row }: Row) => row;

/** One round of the catch-up: the next logged keys, read again on the source and written to the target. */
async function catchUp(
  { source, target }: MoveShards,
  group: number,
  columnsOf: (table: MovedTable) => Columns,
  after: number,
): Promise<{ seq: number; keys: number }> {
  const { results: logged } = await source
    .prepare(
      `SELECT seq, table_name AS tableName, row_key AS rowKey FROM move_log WHERE group_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ${PAGE}`,
    )
    .bind(group, after)
    .all<{ seq: number; tableName: string; rowKey: string }>();
  if (logged.length === 0) return { seq: after, keys: 0 };
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
  return { seq: logged.at(-1)?.seq as number, keys: logged.length };
}

/** The ids past every one either shard handed out: where the group's events and deliveries are numbered from. */
async function numberingPast({ source, target }: MoveShards): Promise<{ eventsFrom: number; deliveriesFrom: number }> {
  const highest = async (table: string) => {
    const [onSource, onTarget] = await Promise.all(
      [source, target].map((d1) =>
        d1.prepare(`SELECT coalesce(max(id), 0) AS id FROM ${quoted(table)}`).first<{ id: number }>(),
      ),
    );
    return Math.max(onSource?.id ?? 0, onTarget?.id ?? 0);
  };
  return { eventsFrom: (await highest("events")) + 1, deliveriesFrom: (await highest("webhook_deliveries")) + 1 };
}

/**
 * Numbers the group's copied events and webhook deliveries from `numbering`, in their order, and points the
 * deliveries and the endpoints' positions at the new event ids, in one batch that ends by writing
 * `events_from` to the target's copy of the group: a resumed switch finds it there and numbers nothing twice.
 */
async function numberMovedLogs(
  { target }: MoveShards,
  group: number,
  { eventsFrom, deliveriesFrom }: { eventsFrom: number; deliveriesFrom: number },
): Promise<void> {
  const numbered = await target
    .prepare("SELECT 1 FROM client_groups WHERE id = ?1 AND events_from = ?2")
    .bind(group, eventsFrom)
    .first();
  if (numbered) return;
  const ownEvents = ownedBy(movedTable("events"), "e", group);
  const ownDeliveries = ownedBy(movedTable("webhook_deliveries"), "d", group);
  await moveBatch(target, group, [
    target
      .prepare(
        `UPDATE events SET id = r.renumbered FROM (SELECT id AS staged, ?1 - 1 + row_number() OVER (ORDER BY origin_id) AS renumbered
         FROM events e WHERE id < 0 AND ${ownEvents}) r WHERE events.id = r.staged`,
      )
      .bind(eventsFrom),
    target.prepare(
      `UPDATE webhook_deliveries AS d SET event_id = (SELECT e.id FROM events e WHERE e.origin_id = d.event_id AND ${ownEvents})
       WHERE id < 0 AND event_id IS NOT NULL AND ${ownDeliveries}`,
    ),
    target
      .prepare(
        `UPDATE webhook_deliveries SET id = r.renumbered FROM (SELECT id AS staged, ?1 - 1 + row_number() OVER (ORDER BY -id) AS renumbered
         FROM webhook_deliveries d WHERE id < 0 AND ${ownDeliveries}) r WHERE webhook_deliveries.id = r.staged`,
      )
      .bind(deliveriesFrom),
    target
      .prepare(
        `UPDATE webhook_endpoints SET last_event_id = ${movedCursorSql("last_event_id", "webhook_endpoints.client_id", "?1")},
         replay_until = CASE WHEN replay_until = 0 THEN 0 ELSE ${movedCursorSql("replay_until", "webhook_endpoints.client_id", "?1")} END
         WHERE ${ownedBy(movedTable("webhook_endpoints"), "webhook_endpoints", group)}`,
      )
      .bind(eventsFrom),
    target.prepare("UPDATE client_groups SET events_from = ?2 WHERE id = ?1").bind(group, eventsFrom),
  ]);
}

/**
 * A cursor the previous shard handed out, in the moved events' ids: the newest moved event of the client
 * at or before it (as SQL over the cursor, the client and the group's first id on this shard).
 */
function movedCursorSql(cursor: string, client: string, eventsFrom: string): string {
  return `coalesce((SELECT max(m.id) FROM events m WHERE m.client_id = ${client} AND m.id >= ${eventsFrom} AND m.origin_id <= ${cursor}), ${eventsFrom} - 1)`;
}

/**
 * The event feed's cursor `after` of client `client`, in this shard's ids: one its group's previous shard
 * handed out (below the group's `events_from`) is read through the moved events' origins.
 */
export function feedCursor(after: number, client: number): SQL {
  const cursor = String(Math.trunc(after));
  const clientId = String(Math.trunc(client));
  return sql.raw(`coalesce((SELECT CASE WHEN ${cursor} > 0 AND ${cursor} < g.events_from
    THEN ${movedCursorSql(cursor, clientId, "g.events_from")} ELSE ${cursor} END
    FROM api_clients c JOIN client_groups g ON g.id = c.group_id WHERE c.id = ${clientId}), ${cursor})`);
}

/**
 * Step 5: once no isolate routes the group to the source (its directory entry is cached for seconds),
 * the source's rows of the group go, children first, with its change log, triggers and copies of the
 * group. Answers the rows deleted.
 */
export async function confirmMove(shards: Pick<MoveShards, "source">, group: number): Promise<number> {
  const { source } = shards;
  // (A move abandoned before its switch left its guard triggers on the shard it was going to.)
  await source.batch(
    [...dropTriggers(group, "fence"), ...dropTriggers(group, "guard")].map((ddl) => source.prepare(ddl)),
  );
  let deleted = 0;
  for (const table of [...MOVED_TABLES].reverse()) {
    for (;;) {
      const { meta } = await source
        .prepare(
          `DELETE FROM ${quoted(table.name)} WHERE rowid IN (SELECT rowid FROM ${quoted(table.name)} t WHERE ${ownedBy(table, "t", group)} LIMIT ${PAGE})`,
        )
        .run();
      deleted += meta.changes ?? 0;
      if (!meta.changes) break;
    }
  }
  await source.batch([
    source.prepare("DELETE FROM move_log WHERE group_id = ?1").bind(group),
    source
      .prepare("DELETE FROM client_ad_tallies WHERE client_id IN (SELECT id FROM api_clients WHERE group_id = ?1)")
      .bind(group),
    source.prepare("DELETE FROM id_blocks WHERE group_id = ?1").bind(group),
    source.prepare("DELETE FROM api_clients WHERE group_id = ?1").bind(group),
    source.prepare("DELETE FROM client_groups WHERE id = ?1").bind(group),
  ]);
  return deleted;
}

/**
 * What a move abandoned before its switch leaves on the group's own shard: the triggers that log its
 * changes, and the log.
 */
export async function dropChangeLog(d1: D1Database, group: number): Promise<void> {
  await d1.batch([
    ...dropTriggers(group, "log").map((ddl) => d1.prepare(ddl)),
    d1.prepare("DELETE FROM move_log WHERE group_id = ?1").bind(group),
  ]);
}

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
