// Seeds local development data: the two dev API clients whose keys live in .dev.vars, in group 1 on
// shard 1 (written to the directory, then copied to the shard).
// Local only: the dev keys must never exist in sandbox or production.
import { copyGroupToShard, openDatabases, readDevVars, sha256Hex, sqlText } from "./d1.mjs";

const vars = readDevVars();
const clients = [
  { name: "dev-internal", key: vars.DEV_INTERNAL_KEY, internal: 1, partner: 0 },
  { name: "dev-partner", key: vars.DEV_PARTNER_KEY, internal: 0, partner: 1 },
];

const statements = clients.map(
  (c) =>
    `INSERT INTO api_clients (name, key_hash, internal, partner, group_id) VALUES (${sqlText(c.name)}, ${sqlText(sha256Hex(c.key))}, ${c.internal}, ${c.partner}, 1)
     ON CONFLICT(name) DO UPDATE SET key_hash = excluded.key_hash, internal = excluded.internal, partner = excluded.partner, revoked = 0;`,
);
const databases = await openDatabases();
try {
  await databases.execute("DIRECTORY", statements);
  await copyGroupToShard(databases, 1);
} finally {
  await databases.close();
}
console.log(`seeded local dev clients: ${clients.map((c) => c.name).join(", ")}`);
