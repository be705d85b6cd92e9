// Helpers for the command-line scripts: run SQL on the D1 databases through wrangler.
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parse } from "smol-toml";

export const sha256Hex = (value) => createHash("sha256").update(value).digest("hex");

/** SQL string literal. */
export const sqlText = (value) => `'${String(value).replaceAll("'", "''")}'`;

/** SQL literal of a JSON value a D1 query answered (text, number, null). */
export const sqlValue = (value) =>
  value === null ? "NULL" : typeof value === "number" ? String(value) : sqlText(value);

/**
 * The arguments that aim a wrangler command at the local database by default, or the deployed one of
 * `env` with `remote`. A local database kept elsewhere than .wrangler/state (the benchmark's own) is
 * named by D1_PERSIST_TO.
 */
const target = ({ remote = false, env } = {}) => [
  remote ? "--remote" : "--local",
  ...(env ? ["--env", env] : []),
  ...(!remote && process.env.D1_PERSIST_TO ? ["--persist-to", process.env.D1_PERSIST_TO] : []),
];

/** Runs wrangler (this project's, without npx's start-up) with the scripts' environment; its output. */
export const wrangler = (args) =>
  execFileSync(process.execPath, [WRANGLER, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
  }).toString();

const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

/** Runs SQL against a database (`binding`: DB, DB_n or DIRECTORY; default DB). */
export function executeSql(sql, { binding = "DB", ...where } = {}) {
  return wrangler(["d1", "execute", binding, ...target(where), "--command", sql]);
}

/** The rows of a query, as D1 answers them. */
export function queryRows(sql, options = {}) {
  const answers = JSON.parse(
    wrangler(["d1", "execute", options.binding ?? "DB", ...target(options), "--json", "--command", sql]),
  );
  return answers.flatMap((answer) => answer.results ?? []);
}

/**
 * Applies a database's migrations (wrangler run beside the others: each database is a file of its own);
 * answers how many were applied.
 */
export async function applyMigrations(binding, where = {}) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [WRANGLER, "d1", "migrations", "apply", binding, ...target(where)],
    {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  // Wrangler reports each migration it applied as a table row marked ✅.
  return new Set(stdout.match(/\d{4}_[\w-]+\.sql(?= *│ ✅)/g)).size;
}

/** The shards' bindings in wrangler.toml for an environment (DB, DB_2, …; src/db/shards.ts). */
export function shardBindings(env) {
  const config = parse(readFileSync("wrangler.toml", "utf8"));
  const databases = (env ? config.env?.[env]?.d1_databases : config.d1_databases) ?? [];
  return databases.map((database) => database.binding).filter((binding) => /^DB(_\d+)?$/.test(binding));
}

/** A shard's binding by number: 1 is DB, n is DB_n. */
export const shardBinding = (shard) => (shard === 1 ? "DB" : `DB_${shard}`);

/** Inserts rows into a table (an upsert by `conflict`, e.g. `ON CONFLICT(id) DO UPDATE SET …`). */
export function insertRows(table, rows, conflict, options) {
  for (let at = 0; at < rows.length; at += 200) {
    const chunk = rows.slice(at, at + 200);
    const columns = Object.keys(chunk[0]);
    const values = chunk.map((row) => `(${columns.map((column) => sqlValue(row[column])).join(", ")})`);
    executeSql(`INSERT INTO ${table} (${columns.join(", ")}) VALUES ${values.join(", ")} ${conflict};`, options);
  }
}

/**
 * Copies a group's row and clients from the directory into its shard (as src/db/directory.ts does in
 * the Worker); its id blocks are leased on its first writes.
 */
export function copyGroupToShard(groupId, options = {}) {
  const group = Number(groupId);
  const [groups, clients] = JSON.parse(
    wrangler([
      "d1",
      "execute",
      "DIRECTORY",
      ...target(options),
      "--json",
      "--command",
      `SELECT * FROM client_groups WHERE id = ${group}; SELECT id, name, key_hash, internal, partner, rate, burst, revoked, group_id FROM api_clients WHERE group_id = ${group};`,
    ]),
  ).map((answer) => answer.results ?? []);
  const [row] = groups;
  if (!row) throw new Error(`the directory has no group ${groupId}`);
  const values = (rows, columns) =>
    rows.map((r) => `(${columns.map((column) => sqlValue(r[column])).join(", ")})`).join(", ");
  const groupColumns = Object.keys(row);
  const clientColumns = Object.keys(clients[0] ?? {});
  const fromDirectory = clientColumns
    .filter((column) => column !== "id")
    .map((column) => `${column} = excluded.${column}`);
  executeSql(
    [
      `INSERT INTO client_groups (${groupColumns.join(", ")}) VALUES ${values([row], groupColumns)} ON CONFLICT(id) DO UPDATE SET shard = excluded.shard;`,
      ...(clients.length > 0
        ? [
            `INSERT INTO api_clients (${clientColumns.join(", ")}) VALUES ${values(clients, clientColumns)} ON CONFLICT(id) DO UPDATE SET ${fromDirectory.join(", ")};`,
          ]
        : []),
    ].join("\n"),
    { ...options, binding: shardBinding(row.shard) },
  );
}

/** KEY=value lines of .dev.vars (local development only). */
export function readDevVars(path = ".dev.vars") {
  const vars = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const match = /^\s*([A-Z0-9_]+)\s*=\s*(.*)\s*$/.exec(line);
    if (match) vars[match[1]] = match[2].replace(/^"(.*)"$/, "$1");
  }
  return vars;
}

/** The marketplace simulator's operator credentials for `portal` (HTTP Basic: its OAuth client, .dev.vars). */
export function simulatorOperator(portal) {
  const vars = readDevVars();
  const upper = portal.toUpperCase();
  return `Basic ${btoa(`${vars[`${upper}_CLIENT_ID`] ?? "classified-ads-dev"}:${vars[`${upper}_CLIENT_SECRET`]}`)}`;
}
