/**
 * Moving a client group from one shard to another while its clients work (issue 56).
 *
 * 1. **Start.** The directory marks the group `moving_to` (its clients are then cached for a second only,
 *    src/middleware/auth.ts), the target gets the group's clients and id blocks (`copyGroup`), and the
 *    source gets triggers that write the key of every row of the group that changes to `move_log`.
 * 2. **Copy.** Each table's rows of the group go to the target in pages, parents before children; a row
 *    whose parent is not there yet was written after its parent's page, so the log has it.
 * 3. **Catch up.** The logged keys are read again on the source and written (or deleted) on the target,
 *    round after round, while writes go on.
 * 4. **Switch.** Triggers on the source refuse every write to the group's rows (`group_moving`: the API
 *    answers 503 with Retry-After, a job's message is retried); the last changes are caught up; the
 *    group's events and webhook deliveries get the target's ids; the directory names the target. Writes
 *    pause for this step only. The group's open jobs are sent again on the target.
 * 5. **Confirm**, once no isolate can still route to the source (`confirmMove`): the source's rows of the
 *    group, its triggers and its log go.
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

const triggerName = (group: number, purpose: "log" | "fence", table: string, op: string) =>
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

/** The triggers that refuse every write to the group's rows on the source. */
function fenceTriggers(group: number, table: MovedTable): string[] {
  return OPERATIONS.map(
    ({ op, rows }) =>
      `CREATE TRIGGER IF NOT EXISTS ${triggerName(group, "fence", table.name, op)} BEFORE ${op.toUpperCase()} ON ${quoted(table.name)}
       WHEN ${rows.map((row) => ownedBy(table, row, group)).join(" OR ")} BEGIN SELECT RAISE(ABORT, '${GROUP_MOVING}'); END`,
  );
}

const dropTriggers = (group: number, purpose: "log" | "fence") =>
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

export interface MoveReport {
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
  /** How long writes to the group were refused. */
  pauseMs: number;
  /** The group's first event id on the target. */
  eventsFrom: number;
}

export interface MoveShards {
  directory: D1Database;
  source: D1Database;
  target: D1Database;
}

/**
 * Moves group `group` from shard `from` to shard `to` (steps 1 to 4 above), answering what it did. The
 * source keeps the group's rows, refusing writes, until `confirmMove`.
 */
export async function moveGroup(
  shards: MoveShards,
  input: {
    group: number;
    from: number;
    to: number;
    /** How long an isolate may route by what it read of the directory before the move began. */
    settleMs: number;
  },
): Promise<MoveReport> {
  const { directory, source, target } = shards;
  const { group, from, to } = input;
  const startedAt = Date.now();
  const started = await directory
    .prepare("UPDATE client_groups SET moving_to = ?2 WHERE id = ?1 AND shard = ?3 AND moving_to IS NULL")
    .bind(group, to, from)
    .run();
  if (!started.meta.changes) throw new Error(`group ${group} is not on shard ${from}, or is moving already`);
  await copyGroup(directory, target, group);
  const columns = new Map(
    await Promise.all(MOVED_TABLES.map(async (t) => [t.name, await columnsOf(source, t.name)] as const)),
  );
  const columnsOfTable = (table: MovedTable) => columns.get(table.name) as Columns;
  await source.batch(
    MOVED_TABLES.flatMap((table) => logTriggers(group, table, columnsOfTable(table))).map((ddl) => source.prepare(ddl)),
  );

  // 2. Copy, table by table, in pages by rowid.
  const copyStart = Date.now();
  const copiedPerTable: Record<string, number> = {};
  for (const table of MOVED_TABLES) {
    const tableColumns = columnsOfTable(table);
    let after = Number.MIN_SAFE_INTEGER;
    let rows = 0;
    for (;;) {
      const { results } = await source
        .prepare(
          `SELECT rowid AS move_rowid, * FROM ${quoted(table.name)} t WHERE rowid > ?1 AND ${ownedBy(table, "t", group)} ORDER BY rowid LIMIT ${PAGE}`,
        )
        .bind(after)
        .all<Row & { move_rowid: number }>();
      if (results.length === 0) break;
      after = results.at(-1)?.move_rowid as number;
      await upsert(target, table, tableColumns, results.map(withoutRowid)).run();
      rows += results.length;
    }
    copiedPerTable[table.name] = rows;
  }
  const copied = Object.values(copiedPerTable).reduce((sum, n) => sum + n, 0);
  const copyMs = Date.now() - copyStart;

  // 3. Catch up while writes go on, until a round finds little to do and every isolate reads the
  // directory again within a second (what it read before the move began is at most `settleMs` old).
  let seq = 0;
  let caughtUp = 0;
  let rounds = 0;
  for (;;) {
    const round = await catchUp(shards, group, columnsOfTable, seq);
    seq = round.seq;
    caughtUp += round.keys;
    rounds += 1;
    if (round.keys >= PAGE / 5) continue;
    if (Date.now() >= startedAt + input.settleMs) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const pauseStart = Date.now();
  await source.batch(MOVED_TABLES.flatMap((table) => fenceTriggers(group, table)).map((ddl) => source.prepare(ddl)));
  for (;;) {
    const round = await catchUp(shards, group, columnsOfTable, seq);
    seq = round.seq;
    caughtUp += round.keys;
    if (round.keys === 0) break;
  }
  const eventsFrom = await numberMovedLogs(shards, group);
  await directory.batch([
    directory
      .prepare("UPDATE client_groups SET shard = ?2, moving_to = NULL, events_from = ?3 WHERE id = ?1")
      .bind(group, to, eventsFrom),
  ]);
  await copyGroup(directory, target, group);
  await source.prepare("UPDATE client_groups SET shard = ?2 WHERE id = ?1").bind(group, to).run();
  await source.batch(dropTriggers(group, "log").map((ddl) => source.prepare(ddl)));
  const pauseMs = Date.now() - pauseStart;
  return { group, from, to, copied, copiedPerTable, copyMs, caughtUp, rounds, pauseMs, eventsFrom };
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
  await target.batch([...deletes.reverse(), ...writes]);
  return { seq: logged.at(-1)?.seq as number, keys: logged.length };
}

/**
 * Numbers the group's copied events and webhook deliveries past every id either shard handed out, in
 * their order, and points the deliveries and the endpoints' positions at the new event ids. Answers the
 * first event id.
 */
async function numberMovedLogs({ source, target }: MoveShards, group: number): Promise<number> {
  const highest = async (table: string) => {
    const [onSource, onTarget] = await Promise.all(
      [source, target].map((d1) =>
        d1.prepare(`SELECT coalesce(max(id), 0) AS id FROM ${quoted(table)}`).first<{ id: number }>(),
      ),
    );
    return Math.max(onSource?.id ?? 0, onTarget?.id ?? 0);
  };
  const eventsFrom = (await highest("events")) + 1;
  const deliveriesFrom = (await highest("webhook_deliveries")) + 1;
  const ownEvents = ownedBy(movedTable("events"), "e", group);
  const ownDeliveries = ownedBy(movedTable("webhook_deliveries"), "d", group);
  await target.batch([
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
  ]);
  return eventsFrom;
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
  await source.batch(dropTriggers(group, "fence").map((ddl) => source.prepare(ddl)));
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
