// npm run db:setup [-- --remote --env production]: applies the migrations of the directory and of every
// shard (src/db/shards.ts), fills a new directory from shard 1 when that database has clients from
// before shards, and, locally, seeds the development clients. Prints how many migrations it applied.
import { parseArgs } from "node:util";
import { applyMigrations, insertRows, queryRows, shardBindings } from "./d1.mjs";

const { values } = parseArgs({
  options: { remote: { type: "boolean", default: false }, env: { type: "string" } },
  strict: false,
});
const where = { remote: values.remote, env: values.env };

const applied = (
  await Promise.all(["DIRECTORY", ...shardBindings(values.env)].map((binding) => applyMigrations(binding, where)))
).reduce((sum, n) => sum + n, 0);

// A directory beside a database from before shards: its clients, groups and id blocks are shard 1's.
const directory = { ...where, binding: "DIRECTORY" };
const [{ n: directoryClients }] = queryRows("SELECT count(*) AS n FROM api_clients;", directory);
const legacyClients = directoryClients === 0 ? queryRows("SELECT * FROM api_clients;", where) : [];
if (legacyClients.length > 0) {
  insertRows("client_groups", queryRows("SELECT * FROM client_groups;", where), "ON CONFLICT DO NOTHING", directory);
  insertRows(
    "id_blocks",
    queryRows("SELECT kind, block, group_id FROM id_blocks;", where),
    "ON CONFLICT DO NOTHING",
    directory,
  );
  insertRows("api_clients", legacyClients, "ON CONFLICT DO NOTHING", directory);
  console.log(`the directory took shard 1's ${legacyClients.length} client(s), their groups and id blocks`);
}
console.log(`applied ${applied} migration(s)`);
