// npm run dev: local D1 migrations and seed, then `wrangler dev` of the API and the marketplace
// simulator, with the arguments given after `--` (they reach the API's Worker).
// It never waits for input (in a terminal wrangler would ask before applying migrations: CI=true
// answers for it) and prints a short banner instead of wrangler's migration tables and update notice.
// Image URLs must be absolute in work done outside a request too (the publish job sends them to a
// marketplace), so that work's media base (LOCAL_MEDIA_BASE) is this server's own address: the port given
// with `--port` (default 8787). A request's URLs follow its own origin, unless MEDIA_BASE_URL is passed.
import { spawn, spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { readDevVars, shardBindings } from "./d1.mjs";

const args = process.argv.slice(2);
const options = parseArgs({
  args,
  options: { port: { type: "string" }, "persist-to": { type: "string" } },
  strict: false,
}).values;
// `-- --persist-to <dir>` keeps the local state elsewhere than .wrangler/state: set-up and seed there too.
const persistTo = typeof options["persist-to"] === "string" ? options["persist-to"] : undefined;
const quiet = {
  ...process.env,
  CI: "true",
  WRANGLER_HIDE_BANNER: "true",
  WRANGLER_SEND_METRICS: "false",
  ...(persistTo ? { D1_PERSIST_TO: persistTo } : {}),
};

/** Runs a set-up step with its output held back; shown only when the step fails. */
function setUp(what, command, commandArgs) {
  const run = spawnSync(command, commandArgs, { env: quiet, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (run.status !== 0) {
    process.stderr.write(`${run.stdout}${run.stderr}\n${what} failed\n`);
    process.exit(run.status ?? 1);
  }
  return run.stdout;
}

// The directory and every shard (src/db/shards.ts), as npm run db:setup does.
const setup = setUp("applying the D1 migrations", "node", ["scripts/db-setup.mjs"]);
const applied = Number(/applied (\d+) migration/.exec(setup)?.[1] ?? 0);
setUp("seeding the development clients", "node", ["scripts/seed.mjs"]);

const port = typeof options.port === "string" ? options.port : "8787";
const origin = `http://localhost:${port}`;
const vars = readDevVars();
console.log(`
  Classified Advertisement Management API (development)
  D1 (the directory and shards ${shardBindings().join(", ")}) ${applied ? `${applied} migration(s) applied` : "up to date"};
  development clients seeded
  API    ${origin}/rest/v1/   (Authorization: Bearer ${vars.DEV_INTERNAL_KEY}, or ${vars.DEV_PARTNER_KEY} as a partner)
  Docs   ${origin}/docs
  Cron   every minute, as in production (and at once: curl "${origin}/__scheduled?cron=*+*+*+*+*")
  Marketplaces  the simulator runs in this session behind ${origin}/simulator/<portal>/ (wrangler's first
         binding table says MARKETPLACE [not connected] before it has started; the second, [connected]);
         what it holds for a user: npm run marketplace -- <userId> --origin ${origin} [--portal portal_b]
  Ports  ${port} (--port), and wrangler's inspector on 9229 or the next free port (--inspector-port)
`);

const mediaBase = ["--var", `LOCAL_MEDIA_BASE:${origin}/media/`];
// The API first (the primary Worker, on the port), then the marketplace simulator beside it in the same
// session (wrangler's multi-config dev), which the API reaches through its MARKETPLACE binding.
const workers = ["--config", "wrangler.toml", "--config", "simulator/wrangler.toml"];
const dev = spawn("npx", ["wrangler", "dev", ...workers, "--test-scheduled", ...mediaBase, ...args], {
  stdio: "inherit",
  env: { ...process.env, WRANGLER_HIDE_BANNER: "true", WRANGLER_SEND_METRICS: "false" },
});
// wrangler dev does not fire cron triggers by itself: the minute's scheduled work (jobs a crash cut off
// sent again, tasks, the archive, moves) runs every minute here as it does in production.
const minute = setInterval(() => {
  fetch(`${origin}/__scheduled?cron=*+*+*+*+*`).catch(() => {
    // Not listening yet (or any more): the next minute tries again.
  });
}, 60_000);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => {
  clearInterval(minute);
  process.exit(code ?? 1);
});
