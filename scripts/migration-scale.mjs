// Times a migration on a large database: `npm run migration:scale -- 0026` applies the migrations before
// it to a fresh SQLite file, seeds a million ads, a million jobs and ledger entries, three million events
// and a million webhook deliveries, then runs the named migration statement by statement and prints every
// statement over 0.3 s, the slowest, and the rows of the seeded tables after it. D1 stops a statement
// after 30 s, so a migration's chunks must each stay well under that (docs/capacity.md).
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

const prefix = process.argv[2];
const files = readdirSync("migrations")
  .filter((name) => name.endsWith(".sql"))
  .sort();
const target = files.findIndex((name) => name.startsWith(`${prefix}_`));
if (!prefix || target < 0) {
  console.error(`usage: npm run migration:scale -- <number> (one of ${files.map((f) => f.slice(0, 4)).join(", ")})`);
  process.exit(2);
}
const path = join(tmpdir(), `migration-scale-${process.pid}.db`);
const db = new DatabaseSync(path, { enableForeignKeyConstraints: false });
const statementsOf = (name) =>
  readFileSync(join("migrations", name), "utf8")
    .split("--> statement-breakpoint")
    .map((statement) => statement.trim())
    .filter(Boolean);
const seconds = (since) => (performance.now() - since) / 1000;

try {
  for (const name of files.slice(0, target)) db.exec(statementsOf(name).join(";\n"));
  // A table rebuild in a migration turns the foreign keys back on; the seed below names users and ads loosely.
  db.exec("PRAGMA foreign_keys = OFF");
  const seeding = performance.now();
  const numbers = (n) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})`;
  db.exec(`${numbers(100)} INSERT INTO users (id, last_name, email, phone) SELECT i, 'Dealer', 'd@x.nl', '0' FROM n`);
  db.exec("INSERT INTO webhook_endpoints (client_id, url, secret) VALUES (1, 'https://hooks.test/', 'x')");
  db.exec(`${numbers(1_000_000)} INSERT INTO ads (user_id, status, type, title, description, category_id)
    SELECT 1 + i % 100, CASE WHEN i % 10 = 0 THEN 'archive' ELSE 'active' END, 'supply', 'Ad ' || i,
    'Beschrijving ' || i, (SELECT min(id) FROM categories) + i % 20 FROM n`);
  db.exec(`${numbers(1_000_000)} INSERT INTO queue_items (ad_id, user_id, portal, action, status, cost, payer_id)
    SELECT i, 1 + i % 100, 'portal_a', 'publish', CASE WHEN i % 1000 = 0 THEN 'pending' ELSE 'done' END, 295, 1 + i % 100 FROM n`);
  db.exec(`${numbers(1_000_000)} INSERT INTO wallet_entries (user_id, amount, kind, description, ad_id, portal, queue_item_id)
    SELECT 1 + i % 100, -295, CASE WHEN i % 50 = 0 THEN 'refund' ELSE 'charge' END, 'plaatsen', i, 'portal_a', i FROM n`);
  db.exec(`${numbers(3_000_000)} INSERT INTO events (client_id, user_id, type, ad_id, portal, data)
    SELECT 1 + i % 7, 1 + i % 100, 'publish.active', i, 'portal_a', json_object('queueItemId', i) FROM n`);
  db.exec(`${numbers(1_000_000)} INSERT INTO webhook_deliveries (endpoint_id, event_id, message_id, attempt, succeeded)
    SELECT 1, i, 'evt_' || i, 1, 1 FROM n`);
  console.log(`seeded over ${target} migrations in ${seconds(seeding).toFixed(1)} s`);
  // The seed leaves foreign keys unchecked (its ads name categories by arithmetic); D1 checks them in the migration.
  db.exec("PRAGMA foreign_keys = ON");

  let slowest = { time: 0, statement: "" };
  const started = performance.now();
  for (const statement of statementsOf(files[target])) {
    const at = performance.now();
    db.exec(statement);
    const time = seconds(at);
    const shown = statement
      .replace(/^--.*$/gm, "")
      .trim()
      .slice(0, 100);
    if (time > 0.3) console.log(`${time.toFixed(2)} s  ${shown}`);
    if (time > slowest.time) slowest = { time, statement: shown };
  }
  console.log(
    `${files[target]}: all in ${seconds(started).toFixed(1)} s, slowest ${slowest.time.toFixed(2)} s: ${slowest.statement}`,
  );
  for (const table of ["ads", "queue_items", "wallet_entries", "events", "webhook_deliveries"])
    console.log(
      table,
      JSON.stringify({ ...db.prepare(`SELECT count(*) AS n, max(rowid) AS newest FROM ${table}`).get() }),
    );
} finally {
  db.close();
  rmSync(path, { force: true });
}
