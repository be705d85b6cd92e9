// Helpers for the command-line scripts: run SQL on the D1 database through wrangler.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export const sha256Hex = (value) => createHash("sha256").update(value).digest("hex");

/** SQL string literal. */
export const sqlText = (value) => `'${String(value).replaceAll("'", "''")}'`;

/**
 * Runs SQL against the local database by default, or the deployed one of `env` with `remote`. A local
 * database kept elsewhere than .wrangler/state (the benchmark's own) is named by D1_PERSIST_TO.
 */
export function executeSql(sql, { remote = false, env } = {}) {
  const args = ["wrangler", "d1", "execute", "DB", remote ? "--remote" : "--local", "--command", sql];
  if (env) args.push("--env", env);
  if (!remote && process.env.D1_PERSIST_TO) args.push("--persist-to", process.env.D1_PERSIST_TO);
  return execFileSync("npx", args, {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  }).toString();
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
