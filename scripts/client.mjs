// Creates and revokes API client keys, in the directory (src/db/shards.ts) and the copy on its shard.
//   npm run client -- create --name acme [--internal] [--partner] [--rate 5] [--burst 20] [--group N | --shard N] [--remote --env production]
//   npm run client -- revoke --name acme [--remote --env production]
// A new client gets a group of its own (on --shard, default the shard with the fewest groups), or joins --group.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { copyGroupToShard, openDatabases, sha256Hex, shardBindings, sqlText } from "./d1.mjs";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: "string" },
    internal: { type: "boolean", default: false },
    partner: { type: "boolean", default: false },
    rate: { type: "string" },
    burst: { type: "string" },
    group: { type: "string" },
    shard: { type: "string" },
    remote: { type: "boolean", default: false },
    env: { type: "string" },
  },
});

const [command] = positionals;
const usage =
  "usage: npm run client -- create|revoke --name NAME [--internal] [--partner] [--rate N] [--burst N] [--group N | --shard N] [--remote] [--env ENV]";
if (!values.name || !["create", "revoke"].includes(command)) {
  console.error(usage);
  process.exit(2);
}
const databases = await openDatabases({ remote: values.remote, env: values.env });
const optionalInt = (value) => (value === undefined ? "NULL" : String(Number.parseInt(value, 10)));

if (command === "create") {
  const key = `cam_${randomBytes(32).toString("base64url")}`;
  let group = values.group === undefined ? undefined : Number.parseInt(values.group, 10);
  if (group === undefined) {
    const shards = shardBindings(values.env).map((binding) => (binding === "DB" ? 1 : Number(binding.slice(3))));
    const counts = new Map(
      (await databases.query("DIRECTORY", "SELECT shard, count(*) AS n FROM client_groups GROUP BY shard;")).map(
        (row) => [row.shard, row.n],
      ),
    );
    const shard =
      values.shard === undefined
        ? shards.sort((a, b) => (counts.get(a) ?? 0) - (counts.get(b) ?? 0))[0]
        : Number.parseInt(values.shard, 10);
    if (!shards.includes(shard)) {
      console.error(`no shard ${shard}: the shards are ${shards.join(", ")}`);
      await databases.close();
      process.exit(2);
    }
    [{ id: group }] = await databases.query(
      "DIRECTORY",
      `INSERT INTO client_groups (shard) VALUES (${shard}) RETURNING id;`,
    );
  }
  await databases.execute("DIRECTORY", [
    `INSERT INTO api_clients (name, key_hash, internal, partner, rate, burst, group_id) VALUES (${sqlText(values.name)}, ${sqlText(sha256Hex(key))}, ${values.internal ? 1 : 0}, ${values.partner ? 1 : 0}, ${optionalInt(values.rate)}, ${optionalInt(values.burst)}, ${group});`,
  ]);
  // Its group's id blocks are leased on its first writes.
  await copyGroupToShard(databases, group);
  console.log(`client ${values.name} created in group ${group}. Its key, shown only now:\n${key}`);
} else {
  const [client] = await databases.query(
    "DIRECTORY",
    `UPDATE api_clients SET revoked = 1 WHERE name = ${sqlText(values.name)} RETURNING group_id;`,
  );
  if (!client) {
    console.error(`no client named ${values.name}`);
    await databases.close();
    process.exit(1);
  }
  await copyGroupToShard(databases, client.group_id);
  console.log(`client ${values.name} revoked (takes effect within 10 seconds on every isolate)`);
}
await databases.close();
