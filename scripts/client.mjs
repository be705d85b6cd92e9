// Creates and revokes API client keys, in the directory (src/db/shards.ts) and the copy on its shard.
//   npm run client -- create --name acme [--internal] [--partner] [--rate 5] [--burst 20] [--group N | --shard N] [--remote --env production]
//   npm run client -- revoke --name acme [--remote --env production]
// A new client gets a group of its own (on --shard, default the shard with the fewest groups), or joins --group.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { copyGroupToShard, executeSql, queryRows, sha256Hex, shardBindings, sqlText } from "./d1.mjs";

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
const target = { remote: values.remote, env: values.env };
const directory = { ...target, binding: "DIRECTORY" };
const optionalInt = (value) => (value === undefined ? "NULL" : String(Number.parseInt(value, 10)));

if (command === "create") {
  const key = `cam_${randomBytes(32).toString("base64url")}`;
  let group = values.group === undefined ? undefined : Number.parseInt(values.group, 10);
  if (group === undefined) {
    const shards = shardBindings(values.env).map((binding) => (binding === "DB" ? 1 : Number(binding.slice(3))));
    const counts = new Map(
      queryRows("SELECT shard, count(*) AS n FROM client_groups GROUP BY shard;", directory).map((row) => [
        row.shard,
        row.n,
      ]),
    );
    const shard =
      values.shard === undefined
        ? shards.sort((a, b) => (counts.get(a) ?? 0) - (counts.get(b) ?? 0))[0]
        : Number.parseInt(values.shard, 10);
    if (!shards.includes(shard)) {
      console.error(`no shard ${shard}: the shards are ${shards.join(", ")}`);
      process.exit(2);
    }
    [{ id: group }] = queryRows(`INSERT INTO client_groups (shard) VALUES (${shard}) RETURNING id;`, directory);
  }
  executeSql(
    `INSERT INTO api_clients (name, key_hash, internal, partner, rate, burst, group_id) VALUES (${sqlText(values.name)}, ${sqlText(sha256Hex(key))}, ${values.internal ? 1 : 0}, ${values.partner ? 1 : 0}, ${optionalInt(values.rate)}, ${optionalInt(values.burst)}, ${group});`,
    directory,
  );
  // Its group's id blocks are leased on its first writes.
  copyGroupToShard(group, target);
  console.log(`client ${values.name} created in group ${group}. Its key, shown only now:\n${key}`);
} else {
  const [client] = queryRows(
    `UPDATE api_clients SET revoked = 1 WHERE name = ${sqlText(values.name)} RETURNING group_id;`,
    directory,
  );
  if (!client) {
    console.error(`no client named ${values.name}`);
    process.exit(1);
  }
  copyGroupToShard(client.group_id, target);
  console.log(`client ${values.name} revoked (takes effect within 10 seconds on every isolate)`);
}
