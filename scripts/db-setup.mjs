// npm run db:setup [-- --remote --env production]: applies the migrations of the directory and of every
// shard (src/db/shards.ts), fills a new directory from shard 1 when that database has clients from
// before shards, moves what an older release kept elsewhere to its one home (return origins to the
// directory, Idempotency-Key records to their client's shard), and, locally, seeds the development
// clients. Prints how many migrations it applied.
import { parseArgs } from "node:util";
import { insertRows, openDatabases, shardBinding, shardBindings, sqlValue } from "./d1.mjs";

const { values } = parseArgs({
  options: { remote: { type: "boolean", default: false }, env: { type: "string" } },
  strict: false,
});
const databases = await openDatabases({ remote: values.remote, env: values.env });
try {
  const applied = await databases.migrate(["DIRECTORY", ...shardBindings(values.env)]);
  // A directory beside a database from before shards: its clients, groups and id blocks are shard 1's.
  const [{ n: directoryClients }] = await databases.query("DIRECTORY", "SELECT count(*) AS n FROM api_clients;");
  const legacyClients = directoryClients === 0 ? await databases.query("DB", "SELECT * FROM api_clients;") : [];
  if (legacyClients.length > 0) {
    const fill = async (table, rows) => insertRows(databases, "DIRECTORY", table, rows, "ON CONFLICT DO NOTHING");
    await fill("client_groups", await databases.query("DB", "SELECT * FROM client_groups;"));
    await fill("id_blocks", await databases.query("DB", "SELECT kind, block, group_id FROM id_blocks;"));
    await fill("api_clients", legacyClients);
    console.log(`the directory took shard 1's ${legacyClients.length} client(s), their groups and id blocks`);
  }
  // Return origins registered before the directory became their one home were kept on the shards only.
  for (const shard of shardBindings(values.env)) {
    const registered = await databases.query(
      shard,
      "SELECT id, return_origins FROM api_clients WHERE return_origins <> '[]';",
    );
    for (const { id, return_origins: origins } of registered)
      await databases.execute("DIRECTORY", [
        `UPDATE api_clients SET return_origins = ${sqlValue(origins)} WHERE id = ${Number(id)} AND return_origins = '[]';`,
      ]);
  }
  // Idempotency-Key records live on the client's own shard (src/middleware/idempotency.ts); those kept
  // before on the shard of the rows a request wrote go home, so a repeat still finds them.
  const homes = new Map(
    (
      await databases.query(
        "DIRECTORY",
        "SELECT c.id AS id, g.shard AS shard FROM api_clients c JOIN client_groups g ON g.id = c.group_id;",
      )
    ).map((row) => [Number(row.id), Number(row.shard)]),
  );
  for (const shard of shardBindings(values.env)) {
    const here = shard === "DB" ? 1 : Number(shard.slice(3));
    const away = [...homes].filter(([, home]) => home !== here).map(([id]) => id);
    if (away.length === 0) continue;
    const strays = await databases.query(
      shard,
      `SELECT * FROM idempotency_keys WHERE client_id IN (${away.join(", ")});`,
    );
    for (const home of new Set(strays.map((row) => homes.get(Number(row.client_id))))) {
      const rows = strays.filter((row) => homes.get(Number(row.client_id)) === home);
      await insertRows(databases, shardBinding(home), "idempotency_keys", rows, "ON CONFLICT DO NOTHING");
    }
    if (strays.length > 0) {
      await databases.execute(shard, [`DELETE FROM idempotency_keys WHERE client_id IN (${away.join(", ")});`]);
      console.log(`${strays.length} Idempotency-Key record(s) of ${shard} went to their clients' shards`);
    }
  }
  console.log(`applied ${applied} migration(s)`);
} finally {
  await databases.close();
}
