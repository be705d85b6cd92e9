// Helpers for the command-line scripts: SQL on the D1 databases, locally or through wrangler remotely.
// The databases are wrangler.toml's, or those of the configuration D1_CONFIG names (the benchmark's, with
// more shards); local state is .wrangler/state's, or D1_PERSIST_TO's.
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parse, stringify } from "smol-toml";

export const sha256Hex = (value) => createHash("sha256").update(value).digest("hex");

/** SQL string literal. */
export const sqlText = (value) => `'${String(value).replaceAll("'", "''")}'`;

/** SQL literal of a JSON value a D1 query answered (text, number, null). */
export const sqlValue = (value) =>
  value === null ? "NULL" : typeof value === "number" ? String(value) : sqlText(value);

/** The arguments that aim a wrangler command at the deployed databases of `env`. */
const remoteTarget = ({ env }) => ["--remote", ...(env ? ["--env", env] : [])];

/** Runs wrangler (this project's, without npx's start-up) with the scripts' environment; its output. */
const wrangler = (args) =>
  execFileSync(process.execPath, [WRANGLER, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
  }).toString();

const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

/**
 * The databases of the configuration (the directory and every shard) for `where`: local by default, in one
 * local runtime (wrangler's getPlatformProxy, on D1_PERSIST_TO or .wrangler/state), or the deployed ones
 * of `where.env` with `where.remote`, through wrangler's commands. Answers
 * - `query(binding, sql)`: the rows of one statement;
 * - `execute(binding, statements)`: the statements, in one transaction locally;
 * - `migrate(bindings)`: applies those databases' pending migrations, answering how many;
 * - `close()`.
 * Locally, wrangler's own commands start a runtime each (`d1 migrations apply` one per migration: 0.7 s
 * each, 26 s a shard); one runtime sets up all the databases in a few seconds.
 */
export async function openDatabases(where = {}) {
  const declared = declaredDatabases(where.env);
  const migrationsOf = (binding) => {
    const database = declared.find((d) => d.binding === binding);
    if (!database) throw new Error(`the configuration declares no D1 database ${binding}`);
    return { dir: database.migrations_dir ?? "migrations", table: database.migrations_table ?? "d1_migrations" };
  };
  if (where.remote) {
    const wranglerD1 = (binding, args) => wrangler(["d1", "execute", binding, ...remoteTarget(where), ...args]);
    return {
      query: (binding, sql) =>
        JSON.parse(wranglerD1(binding, ["--json", "--command", sql])).flatMap((answer) => answer.results ?? []),
      execute: (binding, statements) => {
        wranglerD1(binding, ["--command", statements.join("\n")]);
      },
      migrate: async (bindings) => {
        const counts = await Promise.all(bindings.map((binding) => applyWithWrangler(binding, where)));
        return counts.reduce((sum, n) => sum + n, 0);
      },
      close: async () => {},
    };
  }
  // Imported here: the scripts that only read .dev.vars need neither.
  const [{ getPlatformProxy }, { readD1Migrations }] = await Promise.all([
    import("wrangler"),
    import("@cloudflare/vitest-plugin"),
  ]);
  // A configuration of the databases alone: the Worker's Durable Objects, which a proxy cannot run, would
  // only bring warnings. Local state is keyed by database id, so these are the same files.
  const config = join(mkdtempSync(join(tmpdir(), "d1-scripts-")), "wrangler.toml");
  const ids = ["binding", "database_name", "database_id", "preview_database_id"];
  writeFileSync(
    config,
    stringify({
      name: "d1-scripts",
      compatibility_date: "2025-01-01",
      d1_databases: declared.map((database) =>
        Object.fromEntries(ids.filter((k) => k in database).map((k) => [k, database[k]])),
      ),
    }),
  );
  const startRuntime = () =>
    getPlatformProxy({
      configPath: config,
      persist: { path: join(process.env.D1_PERSIST_TO ?? ".wrangler/state", "v3") },
    });
  let proxy = await startRuntime();
  /**
   * Runs `work` on the databases; when the connection to the local runtime drops (on a busy machine the
   * runtime can close it: "fetch failed", "other side closed"), starts a new runtime and runs it again.
   * Every step here may run twice: a migration's batch is one transaction and `migrate` reads what is
   * applied first; the set-up's writes are idempotent.
   */
  const withRuntime = async (work) => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await work((binding) => proxy.env[binding]);
      } catch (error) {
        if (attempt >= RUNTIME_ATTEMPTS || !droppedConnection(error)) throw error;
        console.error(`the local runtime dropped the connection (${error.message}); starting it again`);
        await proxy.dispose().catch(() => {});
        proxy = await startRuntime();
      }
    }
  };
  return {
    query: (binding, sql) => withRuntime(async (database) => (await database(binding).prepare(sql).all()).results),
    execute: (binding, statements) =>
      withRuntime(async (database) => {
        const db = database(binding);
        await db.batch(statements.map((statement) => db.prepare(statement)));
      }),
    migrate: async (bindings) => {
      let applied = 0;
      for (const binding of bindings) {
        const { dir, table } = migrationsOf(binding);
        const migrations = await readD1Migrations(dir);
        applied += await withRuntime((database) => applyInOneRuntime(database(binding), migrations, table));
      }
      return applied;
    },
    close: async () => {
      await proxy.dispose();
      rmSync(dirname(config), { recursive: true, force: true });
    },
  };
}

/** How often a step is tried on a local runtime that drops the connection. */
const RUNTIME_ATTEMPTS = 5;

/** Whether an error is the local runtime's connection dropping (not the SQL failing). */
const droppedConnection = (error) =>
  /fetch failed|other side closed|socket hang up|ECONNRESET|ECONNREFUSED/i.test(
    `${error?.message} ${error?.cause?.message ?? ""} ${error?.cause?.code ?? ""}`,
  );

/** Wrangler's apply of one database's pending migrations; answers how many it applied. */
async function applyWithWrangler(binding, where) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [WRANGLER, "d1", "migrations", "apply", binding, ...remoteTarget(where)],
    {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  // Wrangler reports each migration it applied as a table row marked ✅.
  return new Set(stdout.match(/\d{4}_[\w-]+\.sql(?= *│ ✅)/g)).size;
}

/**
 * What wrangler's apply does, on a D1 binding, so that wrangler sees the migrations applied: each pending
 * migration and its row in wrangler's table in one batch (one transaction), in order. Answers how many.
 */
async function applyInOneRuntime(db, migrations, table) {
  const escaped = `"${table.replaceAll('"', '""')}"`;
  await db
    .prepare(
      `CREATE TABLE IF NOT EXISTS ${escaped} (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)`,
    )
    .run();
  const { results } = await db.prepare(`SELECT name FROM ${escaped}`).all();
  const applied = new Set(results.map((row) => row.name));
  const pending = migrations.filter((migration) => !applied.has(migration.name));
  for (const migration of pending)
    await db.batch([
      ...migration.queries.map((query) => db.prepare(query)),
      db.prepare(`INSERT INTO ${escaped} (name) VALUES (?)`).bind(migration.name),
    ]);
  return pending.length;
}

/** The D1 databases the configuration declares for an environment (the top level without one). */
function declaredDatabases(env) {
  const config = parse(readFileSync(process.env.D1_CONFIG ?? "wrangler.toml", "utf8"));
  return (env ? config.env?.[env]?.d1_databases : config.d1_databases) ?? [];
}

/** The shards' bindings in wrangler.toml for an environment (DB, DB_2, …; src/db/shards.ts). */
export function shardBindings(env) {
  return declaredDatabases(env)
    .map((database) => database.binding)
    .filter((binding) => /^DB(_\d+)?$/.test(binding));
}

/** A shard's binding by number: 1 is DB, n is DB_n. */
export const shardBinding = (shard) => (shard === 1 ? "DB" : `DB_${shard}`);

/** Inserts rows into a table of `databases` (an upsert by `conflict`, e.g. `ON CONFLICT DO NOTHING`). */
export async function insertRows(databases, binding, table, rows, conflict) {
  for (let at = 0; at < rows.length; at += 200) {
    const chunk = rows.slice(at, at + 200);
    const columns = Object.keys(chunk[0]);
    const values = chunk.map((row) => `(${columns.map((column) => sqlValue(row[column])).join(", ")})`);
    await databases.execute(binding, [
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${values.join(", ")} ${conflict};`,
    ]);
  }
}

/**
 * Copies a group's row and clients from the directory into its shard (as src/db/directory.ts does in
 * the Worker); its id blocks are leased on its first writes.
 */
export async function copyGroupToShard(databases, groupId) {
  const group = Number(groupId);
  const [row] = await databases.query("DIRECTORY", `SELECT * FROM client_groups WHERE id = ${group};`);
  if (!row) throw new Error(`the directory has no group ${groupId}`);
  const clients = await databases.query(
    "DIRECTORY",
    `SELECT id, name, key_hash, internal, partner, rate, burst, revoked, group_id, return_origins FROM api_clients WHERE group_id = ${group};`,
  );
  const values = (rows, columns) =>
    rows.map((r) => `(${columns.map((column) => sqlValue(r[column])).join(", ")})`).join(", ");
  const groupColumns = Object.keys(row);
  const clientColumns = Object.keys(clients[0] ?? {});
  const fromDirectory = clientColumns
    .filter((column) => column !== "id")
    .map((column) => `${column} = excluded.${column}`);
  await databases.execute(shardBinding(row.shard), [
    `INSERT INTO client_groups (${groupColumns.join(", ")}) VALUES ${values([row], groupColumns)} ON CONFLICT(id) DO UPDATE SET shard = excluded.shard;`,
    ...(clients.length > 0
      ? [
          `INSERT INTO api_clients (${clientColumns.join(", ")}) VALUES ${values(clients, clientColumns)} ON CONFLICT(id) DO UPDATE SET ${fromDirectory.join(", ")};`,
        ]
      : []),
  ]);
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
