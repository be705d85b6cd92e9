// Creates and revokes API client keys.
//   npm run client -- create --name acme [--internal] [--partner] [--rate 5] [--burst 20] [--remote --env production]
//   npm run client -- revoke --name acme [--remote --env production]
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { executeSql, sha256Hex, sqlText } from "./d1.mjs";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    name: { type: "string" },
    internal: { type: "boolean", default: false },
    partner: { type: "boolean", default: false },
    rate: { type: "string" },
    burst: { type: "string" },
    remote: { type: "boolean", default: false },
    env: { type: "string" },
  },
});

const [command] = positionals;
const usage =
  "usage: npm run client -- create|revoke --name NAME [--internal] [--partner] [--rate N] [--burst N] [--remote] [--env ENV]";
if (!values.name || !["create", "revoke"].includes(command)) {
  console.error(usage);
  process.exit(2);
}
const target = { remote: values.remote, env: values.env };
const optionalInt = (value) => (value === undefined ? "NULL" : String(Number.parseInt(value, 10)));

if (command === "create") {
  const key = `cam_${randomBytes(32).toString("base64url")}`;
  executeSql(
    `INSERT INTO api_clients (name, key_hash, internal, partner, rate, burst) VALUES (${sqlText(values.name)}, ${sqlText(sha256Hex(key))}, ${values.internal ? 1 : 0}, ${values.partner ? 1 : 0}, ${optionalInt(values.rate)}, ${optionalInt(values.burst)});`,
    target,
  );
  console.log(`client ${values.name} created. Its key, shown only now:\n${key}`);
} else {
  const out = executeSql(
    `UPDATE api_clients SET revoked = 1 WHERE name = ${sqlText(values.name)} RETURNING id;`,
    target,
  );
  if (!out.includes('"id"')) {
    console.error(`no client named ${values.name}`);
    process.exit(1);
  }
  console.log(`client ${values.name} revoked (takes effect within 10 seconds on every isolate)`);
}
