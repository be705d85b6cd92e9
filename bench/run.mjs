// npm run bench: starts `wrangler dev` (bench/worker.ts: the Worker plus a ceiling route) with the rate
// limit raised, drives each scenario with autocannon and prints requests/s, latency, the server's CPU per
// request next to the trivial health route, measured in the same run, and the D1 rows each request reads;
// then publishes 1,000 ads. Three runs by default, then the medians.
//   npm run bench [-- --ads 200000]   the seeded ads (default 20,000, 5,000 per dealer)
//   npm run bench -- --growth         the read scenarios at 20,000 and 1,000,000 ads: growth of CPU and rows
//   npm run bench -- --shards         1, 2 and 4 shards in one run: the read scenarios, and publishing from
//                                     four clients at once spread over the shards
//   npm run bench -- --shards --only "by page="   only the read scenarios whose name holds the text (and
//                                     the health route), and no publishing
//   npm run bench -- --sync           a stock of BENCH_SYNC_ITEMS (10,000) items synced, then synced again
//                                     unchanged: items/s as a ratio to the health route, workerd's memory
//   npm run bench -- --feeds          a feed of BENCH_SYNC_ITEMS (10,000) items fetched (a sync: items/s as a
//                                     ratio to the health route), then fetched again unchanged: the requests it
//                                     cost (a 304, and the same bytes from a server without validators)
//   npm run bench -- --archive        the last 1,000-row page of an archive month of 1,000 and of 1,000,000
//                                     rows: the server's CPU per page, and their ratio (target ≤ 2×)
//   npm run bench -- --startup        the production Worker's startup, a one-route Hono Worker's and what
//                                     an isolate's first invocation adds (wrangler check startup), in ms
//   BENCH_RUNS=3 BENCH_SECONDS=10 BENCH_CONNECTIONS=10 BENCH_PORT=8788 BENCH_GROWTH_SIZES=20000,1000000
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { parse, stringify } from "smol-toml";
import WebSocket from "ws";
import { simulatorOperator } from "../scripts/d1.mjs";
import { startupRounds } from "../scripts/startup/profile.mjs";

const { values: options } = parseArgs({
  options: {
    ads: { type: "string" },
    growth: { type: "boolean", default: false },
    shards: { type: "boolean", default: false },
    sync: { type: "boolean", default: false },
    startup: { type: "boolean", default: false },
    archive: { type: "boolean", default: false },
    feeds: { type: "boolean", default: false },
    only: { type: "string" },
  },
});
const runs = Number(process.env.BENCH_RUNS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const port = Number(process.env.BENCH_PORT ?? 8788);
const receiverPort = port + 2;
/** The inspector of the server's Worker (wrangler dev's), where the bench reads its isolate's heap. */
const inspectorPort = port + 3;
const origin = `http://127.0.0.1:${port}`;
const auth = { Authorization: "Bearer dev-internal-key" };
const ADS_PER_DEALER = 5000;
const PAGE = 25;
// wrangler's own log grows some 40 MB a minute under load: it goes to a directory of its own in /tmp.
// So does each size's local state: every bench starts from the same seeded ads and leaves the dev
// database alone.
const env = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CI: "true",
  WRANGLER_LOG_PATH: mkdtempSync(join(tmpdir(), "bench-wrangler-logs-")),
};

/**
 * A local D1 of its own with `ads` seeded ads: migrations (of the shards `config` declares), the dev
 * clients, then bench/seed-ads.sql on shard 1.
 */
function seededState(ads, config = "wrangler.toml") {
  const state = mkdtempSync(join(tmpdir(), "bench-state-"));
  const stateEnv = { ...env, D1_PERSIST_TO: state, D1_CONFIG: config };
  const wrangler = (args) => {
    const run = spawnSync("npx", ["wrangler", ...args, "--local", "--persist-to", state], {
      env: stateEnv,
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (run.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed`);
    return run.stdout.toString();
  };
  // The directory and every shard, migrated and seeded as npm run db:setup does.
  const setup = spawnSync("node", ["scripts/db-setup.mjs"], { env: stateEnv, stdio: ["ignore", "ignore", "inherit"] });
  if (setup.status !== 0) throw new Error("migrating the local databases failed");
  const seed = spawnSync("node", ["scripts/seed.mjs"], { env: stateEnv, stdio: "inherit" });
  if (seed.status !== 0) throw new Error("seeding the dev clients failed");
  const dealers = Math.max(1, Math.ceil(ads / ADS_PER_DEALER));
  const file = join(state, "seed-ads.sql");
  writeFileSync(
    file,
    readFileSync("bench/seed-ads.sql", "utf8")
      .replaceAll("__ADS__", String(ads))
      .replaceAll("__USERS__", String(dealers)),
  );
  const started = Date.now();
  wrangler(["d1", "execute", "DB", "--file", file]);
  console.log(
    `seeded ${ads.toLocaleString("en")} ads of ${dealers} dealers in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  const [{ results }] = JSON.parse(
    wrangler([
      "d1",
      "execute",
      "DB",
      "--json",
      "--command",
      "SELECT u.id AS userId, f.id AS folderId FROM users u JOIN folders f ON f.user_id = u.id WHERE u.external_user_id = 990000001",
    ]),
  );
  return { state, stateEnv, ads, dealer: results[0] };
}

const searchAttribute =
  "&searchattributes[0][portal]=portal_a&searchattributes[0][key]=condition&searchattributes[0][value_equals]=nieuw";

/**
 * The scenarios of a seeded state. Pages are the internal client's (the dev key): one dealer's list, or
 * all dealers' when no `userId` is given. `kind` says which growth target applies; `ceiling` names the bare
 * query a page is measured against.
 */
/** The scenarios `--only` names (with the health route, every ratio's base), or every one. */
const chosen = (scenarios) =>
  options.only === undefined
    ? scenarios
    : scenarios.filter((scenario) => scenario.name.includes(options.only) || scenario.path === "/rest/v1/health");

function scenariosOf({ ads, dealer }) {
  const deepPage = Math.floor((0.9 * ads) / PAGE);
  const ceiling = { name: "ceiling: one bare D1 query of 25 ads", path: "/rest/v1/bench/ceiling?rows=25&page=40" };
  const ceiling500 = { name: "ceiling: one bare D1 query of 500 ads", path: "/rest/v1/bench/ceiling?rows=500&page=10" };
  const list = (query) => `/rest/v1/ads/?${query}`;
  return [
    { name: "GET /rest/v1/health (baseline)", path: "/rest/v1/health", kind: "base" },
    { name: "GET /rest/v1/client/ (auth + rate limit)", path: "/rest/v1/client/", kind: "base" },
    { ...ceiling, kind: "ceiling" },
    { ...ceiling500, kind: "ceiling" },
    {
      name: "a dealer's page of 25 full ads",
      path: list(`userId=${dealer.userId}&itemsPerPage=25`),
      kind: "page",
      ceiling,
    },
    { name: "all dealers' ads, first page of 25", path: list("itemsPerPage=25"), kind: "page", ceiling },
    {
      name: "all dealers' ads, page at 90% depth by cursor",
      path: list("itemsPerPage=25"),
      // The cursor the page before hands out (read once, by page number, before the measurement).
      cursorFrom: list(`itemsPerPage=25&simple=true&page=${deepPage - 1}`),
      kind: "page",
      ceiling,
    },
    {
      name: "all dealers' ads, page at 90% depth by page= (offset)",
      path: list(`itemsPerPage=25&page=${deepPage}`),
      kind: "offset",
      ceiling,
    },
    {
      name: "status filter: archived, all dealers",
      path: list("status=archive&itemsPerPage=25"),
      kind: "page",
      ceiling,
    },
    {
      name: "folder filter: a dealer's folder",
      path: list(`userId=${dealer.userId}&folderId=${dealer.folderId}&itemsPerPage=25`),
      kind: "page",
      ceiling,
    },
    {
      name: "simple page of 500 (page 10)",
      path: list("simple=true&itemsPerPage=500&page=10"),
      kind: "offset",
      ceiling: ceiling500,
    },
    {
      name: "keyword search, a dealer's",
      path: list(`userId=${dealer.userId}&searchkeyword=fiets&itemsPerPage=25`),
      kind: "search",
      ceiling,
    },
    {
      name: "keyword search, all dealers",
      path: list("searchkeyword=fiets&itemsPerPage=25"),
      kind: "matches",
      ceiling,
    },
    {
      name: "attribute search, a dealer's",
      path: list(`userId=${dealer.userId}&categoryId=9301&itemsPerPage=25${searchAttribute}`),
      kind: "search",
      ceiling,
    },
    {
      name: "attribute search, all dealers",
      path: list(`categoryId=9301&itemsPerPage=25${searchAttribute}`),
      kind: "matches",
      ceiling,
    },
  ];
}

function startServer(state, config) {
  return spawn(
    "npx",
    [
      "wrangler",
      "dev",
      // The API (bench/worker.ts in place of its main) and the marketplace simulator beside it.
      "--config",
      config,
      "--config",
      "simulator/wrangler.toml",
      "bench/worker.ts",
      "--persist-to",
      state,
      "--port",
      String(port),
      "--var",
      "RATE_LIMIT_RPS:1000000",
      "--var",
      "RATE_LIMIT_BURST:1000000",
      "--var",
      "LOG_REQUESTS:false",
      "--inspector-port",
      String(inspectorPort),
    ],
    { env, stdio: ["ignore", "ignore", "inherit"], detached: true },
  );
}

/**
 * Runs `work` against a fresh `wrangler dev` on `state`: every scenario gets its own server, because
 * wrangler dev's local proxy keeps a socket per request and runs out of file descriptors after some
 * 20,000 requests.
 */
async function withServer(state, work, config = "wrangler.toml") {
  const server = startServer(state, config);
  const exited = new Promise((resolve) => server.on("exit", resolve));
  try {
    await waitForHealth();
    return await work(server);
  } finally {
    process.kill(-server.pid, "SIGTERM");
    await exited;
  }
}

async function waitForHealth(deadline = Date.now() + 60_000) {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${origin}/rest/v1/health`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error("wrangler dev did not come up within 60 s");
}

/** One API call: its data, and the D1 rows it read and wrote (its Server-Timing). */
const apiCall = async (method, path, body, headers = auth) => {
  const response = await fetch(`${origin}/rest/v1${path}`, {
    method,
    headers: { ...headers, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!json.result) throw new Error(`${method} ${path}: ${JSON.stringify(json.errors)}`);
  const [, read, written] = /rows_read=(\d+) rows_written=(\d+)/.exec(response.headers.get("Server-Timing")) ?? [];
  return { data: json.data, rowsRead: Number(read), rowsWritten: Number(written) };
};
const api = async (method, path, body, headers = auth) => (await apiCall(method, path, body, headers)).data;

/**
 * Rows written per hot write, against the floor the schema sets (for docs/capacity.md). Jobs, due tasks
 * and deliveries run inside the Worker, out of reach of a request's Server-Timing, so the table comes from
 * test/api/write-cost.test.ts, which meters each write on local D1 in workerd and holds it to twice its floor.
 */
function writeCosts() {
  const run = spawnSync("npx", ["vitest", "run", "--silent=false", "test/api/write-cost.test.ts"], {
    encoding: "utf8",
    env: { ...process.env, WRITE_COST_REPORT: "1" },
  });
  const line = `${run.stdout}\n${run.stderr}`.split("\n").find((l) => l.includes("WRITE_COST "));
  if (run.status !== 0 || !line) throw new Error(`the write-cost test failed:\n${run.stdout}${run.stderr}`);
  const table = JSON.parse(line.slice(line.indexOf("WRITE_COST ") + "WRITE_COST ".length));
  console.log("\nD1 rows written per hot write, against its floor (test/api/write-cost.test.ts)\n");
  console.table(
    table.map(({ write, rows, floor, ratio }) => ({
      write,
      "rows written": rows,
      floor,
      "× floor": ratio.toFixed(2),
    })),
  );
}

/** What publishing must keep up: ads active per second, in either way of sending them. */
const PUBLISH_TARGET_ADS_PER_SECOND = 150;

/**
 * 1,000 ads placed on portal_a (the simulator), sent as `/publish/batch` calls of `batch` ads one after
 * the other, their status polled every `pollMs`: the time until every one is active. Sent as one batch
 * it is the queue's throughput; as batches of 100 polled each second, what an integrator sees.
 */
async function publishScenario(
  { batch = 1000, pollMs = 500, key } = {},
  count = Number(process.env.BENCH_PUBLISH_ADS ?? 1000),
) {
  // The dev internal client's, or another internal client's (on a shard of its own: shardsBench).
  const headers = key ? { Authorization: `Bearer ${key}` } : auth;
  const call = (method, path, body) => api(method, path, body, headers);
  const user = await call("POST", "/users/", {
    externalUserId: Date.now() + Math.floor(Math.random() * 1000),
    lastName: "Bench",
    email: "publish@example.nl",
    phone: "0201234567",
  });
  await call("POST", "/user/activate/", { userId: user.userId, activationtoken: user.activation.activationtoken });
  const { redirect } = await call("POST", `/oauth/${user.userId}/portal_a/`);
  // A marketplace account of its own, made on the consent page's sign-up form (its hidden fields are
  // the authorization request's parameters), so the simulator's counts are this run's alone.
  const signup = new URLSearchParams(new URL(redirect).search);
  signup.set("username", `bench-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  signup.set("password", "bench-password");
  const approval = await fetch(`${origin}/simulator/portal_a/signup`, {
    method: "POST",
    body: signup,
    redirect: "manual",
  });
  const callback = new URL(approval.headers.get("Location"));
  await call("PUT", `/oauth/${user.userId}/portal_a/`, {
    code: callback.searchParams.get("code"),
    state: callback.searchParams.get("state"),
  });
  const adIds = [];
  for (let i = 0; i < count; i += 20) {
    const created = await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, (_, j) =>
        call("POST", "/ads/", {
          userId: user.userId,
          // Brommers: placing one on portal_a costs money, so the ledger shows one charge per ad.
          categoryId: 9204,
          title: `Publicatie ${i + j}`,
          description: "Bank voor de benchmark",
          price: { model: "fixed", price: 1000 },
          attributes: [{ portal: "portal_a", values: [{ key: "condition", value: "gebruikt" }] }],
        }),
      ),
    );
    adIds.push(...created.map((ad) => ad.adId));
  }
  const [ad] = await call("GET", `/ads/?adId=${adIds[0]}`);
  const price = ad.prices.portal_a[0].priceTotal;
  const credit = price * adIds.length * 2;
  await call("POST", "/wallet/", { userId: user.userId, amount: credit, description: "benchmark" });
  const preflight = await preflightOf(user.userId, adIds.slice(0, 100), headers);
  const started = Date.now();
  for (let i = 0; i < adIds.length; i += batch)
    await call("POST", "/publish/batch", { userId: user.userId, adId: adIds.slice(i, i + batch), portal: "portal_a" });
  const queuedAfter = (Date.now() - started) / 1000;
  for (;;) {
    const statuses = await call("POST", "/status/", { userId: user.userId, adId: adIds, itemsPerPage: 1000 });
    const active = statuses.filter((s) => s.portals[0].publish.active).length;
    if (active === adIds.length) break;
    if (Date.now() - started > 600_000) throw new Error(`only ${active} of ${adIds.length} active after 10 minutes`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const seconds = (Date.now() - started) / 1000;
  // What it cost and what reached the marketplace: one charge and one live listing per ad.
  const wallet = await call("GET", `/wallet/${user.userId}`);
  const charges = (credit - wallet.balance) / price;
  const connection = await call("GET", `/oauth/${user.userId}/portal_a/`);
  // The simulator's control route is the operator's: the portal's OAuth client credentials (.dev.vars).
  const marketplace = await (
    await fetch(`${origin}/simulator/portal_a/control/accounts/${connection.externalUserId}`, {
      headers: { Authorization: simulatorOperator("portal_a") },
    })
  ).json();
  return {
    batch,
    ads: adIds.length,
    queuedAfter,
    seconds,
    adsPerSecond: adIds.length / seconds,
    charges,
    marketplace,
    preflight,
  };
}

/**
 * A dry run of publishing `adIds` (at most 100) to portal_a: its time against a health call's made right
 * after it, its D1 rows, and how many of the ads it would place (the marketplace reviews each one).
 */
async function preflightOf(userId, adIds, headers = auth) {
  const timed = async (work) => {
    const started = performance.now();
    const result = await work();
    return { result, ms: performance.now() - started };
  };
  const dry = await timed(() =>
    apiCall("POST", "/publish/preflight/", { userId, adId: adIds, portal: "portal_a" }, headers),
  );
  const health = await timed(() => fetch(`${origin}/rest/v1/health`).then((r) => r.text()));
  const { data, rowsRead, rowsWritten } = dry.result;
  return {
    ads: adIds.length,
    ms: dry.ms,
    healthRatio: dry.ms / health.ms,
    rowsRead,
    rowsWritten,
    placements: data.verdicts.filter((v) => v.outcome === "placement" && v.verifiedByMarketplace).length,
  };
}

/** CPU seconds (user + system) used so far by every process of the server's process group. */
function groupCpuSeconds(pgid) {
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {} // the process ended meanwhile
  }
  return ticks / 100; // USER_HZ
}

/** CPU ticks of each thread of the workerd processes in the server's process group. */
function workerdThreadTicks(pgid) {
  const ticks = new Map();
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      if (Number(fields[2]) !== pgid || !readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("workerd")) continue;
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const thread = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8").split(") ")[1].split(" ");
        ticks.set(`${pid}/${tid}`, Number(thread[11]) + Number(thread[12]));
      }
    } catch {} // the process or thread ended meanwhile
  }
  return ticks;
}

/** The busiest workerd thread's share of a core between two readings `seconds` apart (1: it was saturated). */
const busiestThread = (before, after, seconds) =>
  Math.max(0, ...[...after].map(([thread, ticks]) => (ticks - (before.get(thread) ?? 0)) / 100 / seconds));

/** The scenario's path; one that follows a cursor asks for it first. */
async function pathOf(scenario) {
  if (!scenario.cursorFrom) return scenario.path;
  const { nextCursor } = await (await fetch(origin + scenario.cursorFrom, { headers: auth })).json();
  if (!nextCursor) throw new Error(`${scenario.cursorFrom} handed out no cursor`);
  return `${scenario.path}&cursor=${nextCursor}`;
}

/** What one request of the path reads in D1 (its Server-Timing) and, for a list, how many ads match. */
async function costOf(path) {
  const response = await fetch(origin + path, { headers: auth });
  const body = await response.json();
  const timing = /rows_read=(\d+)/.exec(response.headers.get("Server-Timing") ?? "");
  return { rowsRead: timing ? Number(timing[1]) : 0, matches: body.totalItems };
}

async function measure(scenario, server) {
  const path = await pathOf(scenario);
  // One request first, so the measurement does not pay for compilation (nor the catalogue's first read).
  await fetch(origin + path, { headers: auth });
  const { rowsRead, matches } = await costOf(path);
  const cpuBefore = groupCpuSeconds(server.pid);
  const result = await autocannon({ url: origin + path, headers: auth, connections, duration: seconds });
  const requests = result.requests.total;
  return {
    scenario: scenario.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMs: ((groupCpuSeconds(server.pid) - cpuBefore) * 1000) / Math.max(requests, 1),
    non2xx: result.non2xx + result.errors,
    rowsRead,
    matches,
  };
}

const report = (label, publish) => {
  console.log(
    `\n${label}: ${publish.ads} ads to portal_a (simulator) sent as batches of ${publish.batch}, answered in ${publish.queuedAfter.toFixed(1)} s, ` +
      `all active after ${publish.seconds.toFixed(1)} s = ${publish.adsPerSecond.toFixed(1)} ads/s`,
  );
  console.log(
    `placements charged: ${publish.charges}; at the simulator: ${publish.marketplace.listings} listings, ` +
      `${publish.marketplace.online} online, ${publish.marketplace.duplicateRefs} references with more than one listing`,
  );
  const { preflight } = publish;
  console.log(
    `dry run (POST /publish/preflight/) of ${preflight.ads} ads: ${preflight.ms.toFixed(0)} ms, ` +
      `${preflight.healthRatio.toFixed(1)}× a health call; ${preflight.placements} verified placements; ` +
      `D1 rows read ${preflight.rowsRead}, written ${preflight.rowsWritten}`,
  );
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
/** The median of the runs, then each run. */
const runsOf = (values) => `${median(values).toFixed(2)} (${values.map((v) => v.toFixed(2)).join(", ")})`;

/** Every scenario, each against a fresh server, `runs` times: each run's table, then per scenario its runs. */
async function readScenarios(fixture, scenarios, { afterRun, config, label = "" } = {}) {
  const readRuns = [];
  for (let r = 1; r <= runs; r += 1) {
    const rows = [];
    for (const scenario of scenarios)
      rows.push(await withServer(fixture.state, (server) => measure(scenario, server), config));
    const base = rows[0];
    console.log(
      `\n${fixture.ads.toLocaleString("en")} ads${label}, run ${r} of ${runs}: ${seconds}s per scenario, ${connections} connections, a fresh wrangler dev each\n`,
    );
    console.table(
      rows.map((row) => ({
        scenario: row.scenario,
        "req/s": Math.round(row.rps),
        "p50 ms": row.p50,
        "p99 ms": row.p99,
        "req/s vs health": (row.rps / base.rps).toFixed(2),
        "server CPU ms/req": row.cpuMs.toFixed(1),
        "D1 rows read/req": row.rowsRead,
        "non-2xx": row.non2xx,
      })),
    );
    readRuns.push(rows.map((row) => ({ ...row, ratio: row.rps / base.rps })));
    await afterRun?.(r);
  }
  return scenarios.map((scenario, i) => {
    const of = (field) => readRuns.map((rows) => rows[i][field]);
    return {
      scenario,
      runs: readRuns.map((rows) => rows[i]),
      ratio: of("ratio"),
      cpuMs: of("cpuMs"),
      rowsRead: of("rowsRead"),
      matches: of("matches"),
    };
  });
}

// Growth targets (issue 28): from the smallest to the largest size, CPU per request grows at most 1.3×
// for the pages and 2× for a dealer's searches, and a page reads at most 4 rows per ad it shows plus a
// constant. A search across every dealer (`matches`) has as many more matches as there are more ads and
// counts them exactly, so it is measured by the rows it reads per match instead.
const GROWTH_LIMIT = { page: 1.3, search: 2 };
const ROWS_CONSTANT = 50;

/** `npm run bench -- --growth`: the read scenarios at each size, then their growth. */
async function growthBench() {
  const sizes = (process.env.BENCH_GROWTH_SIZES ?? "20000,1000000").split(",").map(Number);
  const measured = [];
  for (const size of sizes) {
    const fixture = seededState(size);
    try {
      measured.push(await readScenarios(fixture, chosen(scenariosOf(fixture).filter((s) => s.kind !== "ceiling"))));
    } finally {
      rmSync(fixture.state, { recursive: true, force: true });
    }
  }
  const [small, large] = [measured[0], measured.at(-1)];
  const label = (size) => `${(size / 1000).toLocaleString("en")}k`;
  const [from, to] = [label(sizes[0]), label(sizes.at(-1))];
  console.log(
    `\ngrowth from ${sizes[0].toLocaleString("en")} to ${sizes.at(-1).toLocaleString("en")} ads: medians of ${runs} runs\n`,
  );
  console.table(
    small.map((before, i) => {
      const after = large[i];
      const cpuGrowth = median(after.cpuMs) / median(before.cpuMs);
      const rows = median(after.rowsRead);
      const limit = GROWTH_LIMIT[before.scenario.kind];
      const verdicts = [];
      if (limit) verdicts.push(cpuGrowth <= limit ? `CPU ≤ ${limit}×` : `CPU OVER ${limit}×`);
      if (before.scenario.kind === "page")
        verdicts.push(rows <= 4 * PAGE + ROWS_CONSTANT ? `rows ≤ 4×${PAGE}+${ROWS_CONSTANT}` : "rows OVER");
      if (before.scenario.kind === "matches" && median(after.matches))
        verdicts.push(`${(rows / median(after.matches)).toFixed(1)} rows per match`);
      return {
        scenario: before.scenario.name,
        [`CPU ms/req ${from}`]: median(before.cpuMs).toFixed(1),
        [`CPU ms/req ${to}`]: median(after.cpuMs).toFixed(1),
        "CPU growth": `${cpuGrowth.toFixed(2)}×`,
        [`rows read ${from}`]: median(before.rowsRead),
        [`rows read ${to}`]: rows,
        [`matches ${to}`]: median(after.matches) ?? "",
        // A full ad is its row, its user and one row of its kept details (ad_details).
        "rows per ad shown": before.scenario.kind === "page" ? (rows / PAGE).toFixed(1) : "",
        target: verdicts.join(", "),
      };
    }),
  );
}

/** `npm run bench`: the scenarios at one size against their ceilings, and publishing. */
async function sizeBench() {
  const fixture = seededState(Number(options.ads ?? 20000));
  const scenarios = chosen(scenariosOf(fixture));
  const publishRuns = [];
  const polledRuns = [];
  try {
    const results = await readScenarios(fixture, scenarios, {
      afterRun: async (r) => {
        const publish = await withServer(fixture.state, () => publishScenario());
        report(`run ${r} of ${runs}`, publish);
        publishRuns.push(publish);
        const polled = await withServer(fixture.state, () => publishScenario({ batch: 100, pollMs: 1000 }));
        report(`run ${r} of ${runs}`, polled);
        polledRuns.push(polled);
      },
    });
    console.log(`\nmedians of ${runs} runs (each value in brackets is one run)\n`);
    console.table(
      results.map(({ scenario, ratio, cpuMs, rowsRead, matches }) => ({
        scenario: scenario.name,
        "req/s vs health": runsOf(ratio),
        // Only the pages have a ceiling: the bare query of as many rows as they show.
        "of its ceiling": scenario.ceiling
          ? runsOf(
              ratio.map((value, r) => value / results.find((c) => c.scenario.name === scenario.ceiling.name)?.ratio[r]),
            )
          : "",
        "server CPU ms/req": runsOf(cpuMs),
        "D1 rows read/req": median(rowsRead),
        matches: median(matches) ?? "",
      })),
    );
    for (const measured of [publishRuns, polledRuns]) {
      const perSecond = median(measured.map((p) => p.adsPerSecond));
      console.log(
        `publishing ${measured[0].ads} ads as batches of ${measured[0].batch}: POST answered in ${runsOf(measured.map((p) => p.queuedAfter))} s, ` +
          `${runsOf(measured.map((p) => p.adsPerSecond))} ads/s until all active ` +
          `(target ≥ ${PUBLISH_TARGET_ADS_PER_SECOND}: ${perSecond >= PUBLISH_TARGET_ADS_PER_SECOND ? "met" : "MISSED"}); charged ` +
          `${measured.map((p) => p.charges).join(", ")}; listings at the simulator ` +
          `${measured.map((p) => p.marketplace.listings).join(", ")}, references with more than one listing ` +
          `${measured.map((p) => p.marketplace.duplicateRefs).join(", ")}`,
      );
    }
    console.log(
      `\ndry run of ${publishRuns[0].preflight.ads} ads (POST /publish/preflight/), medians of ${runs} runs\n`,
    );
    console.table([
      {
        ms: runsOf(publishRuns.map((p) => p.preflight.ms)),
        "× a health call": runsOf(publishRuns.map((p) => p.preflight.healthRatio)),
        "D1 rows read": median(publishRuns.map((p) => p.preflight.rowsRead)),
        "D1 rows written": median(publishRuns.map((p) => p.preflight.rowsWritten)),
        "verified placements": median(publishRuns.map((p) => p.preflight.placements)),
      },
    ]);
    await webhookRun(fixture);
    writeCosts();
  } finally {
    rmSync(fixture.state, { recursive: true, force: true });
  }
}

/** A webhook receiver in this process: counts what arrives, answers 204. */
function startReceiver() {
  const received = { count: 0 };
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      received.count += 1;
      response.writeHead(204).end();
    });
  }).listen(receiverPort, "127.0.0.1");
  return { received, close: () => server.close() };
}

/** Publishing once more with a webhook endpoint registered (the bench runs its own receiver). */
async function webhookRun(fixture) {
  const receiver = startReceiver();
  try {
    const withWebhook = await withServer(fixture.state, async () => {
      const { webhookId } = await api("POST", "/webhooks/", { url: `http://127.0.0.1:${receiverPort}/hooks` });
      try {
        return await publishScenario();
      } finally {
        await api("DELETE", `/webhooks/${webhookId}`);
      }
    });
    report("with one webhook endpoint", withWebhook);
    console.log(`webhook deliveries received by then: ${receiver.received.count}`);
  } finally {
    receiver.close();
  }
}

/** The shard counts `npm run bench -- --shards` compares in one run. */
const SHARD_COUNTS = [1, 2, 4];
/** Publishing clients per shard count, spread over its shards in turn (4 shards: one each). */
const PUBLISHING_CLIENTS = 4;

/**
 * wrangler.toml with shards 1 … `shards` (DB_3 and on made like DB_2), written beside it so that its
 * relative paths still hold, for the bench alone; answers its path. Local state is keyed by database id, so
 * every count's server reads the same databases.
 */
function configWithShards(shards) {
  const { env: _environments, ...config } = parse(readFileSync("wrangler.toml", "utf8"));
  const isShard = (database) => /^DB(_\d+)?$/.test(database.binding);
  const first = config.d1_databases.find((database) => database.binding === "DB");
  const declared = new Map(config.d1_databases.filter(isShard).map((database) => [database.binding, database]));
  const shardDatabases = Array.from({ length: shards }, (_, i) => {
    const binding = i === 0 ? "DB" : `DB_${i + 1}`;
    return (
      declared.get(binding) ?? {
        ...first,
        binding,
        database_name: `${first.database_name}-${i + 1}`,
        database_id: `00000000-0000-4000-8000-${String((i + 1) * 100).padStart(12, "0")}`,
      }
    );
  });
  const path = `wrangler.bench-${shards}-shards.toml`;
  writeFileSync(
    path,
    stringify({ ...config, d1_databases: [...config.d1_databases.filter((d) => !isShard(d)), ...shardDatabases] }),
  );
  return path;
}

/**
 * `npm run bench -- --shards`: with 1, 2 and 4 shards in one run, on the same seeded ads (on shard 1),
 *  - the read scenarios, each against a fresh server: CPU per request and D1 rows read per shard count;
 *  - publishing from four clients at once, placed on the shards in turn (`BENCH_PUBLISH_ADS` ads each,
 *    default 250), as ads/s and as a ratio to the health route's requests/s in that server.
 * Then the medians of the runs.
 */
async function shardsBench() {
  const configs = new Map(SHARD_COUNTS.map((shards) => [shards, configWithShards(shards)]));
  const widest = configs.get(Math.max(...SHARD_COUNTS));
  const fixture = seededState(Number(options.ads ?? 20000), widest);
  const perClient = Number(process.env.BENCH_PUBLISH_ADS ?? 250);
  const newKey = (name, shard) => {
    const args = ["create", "--name", name, "--internal", "--rate", "10000", "--burst", "10000", "--shard"];
    const run = spawnSync("node", ["scripts/client.mjs", ...args, String(shard)], {
      env: fixture.stateEnv,
      encoding: "utf8",
    });
    if (run.status !== 0) throw new Error(`creating client ${name} failed: ${run.stderr}`);
    return run.stdout.trim().split("\n").at(-1);
  };
  const publishers = new Map(
    SHARD_COUNTS.map((shards) => [
      shards,
      Array.from({ length: PUBLISHING_CLIENTS }, (_, c) => newKey(`bench-${shards}-${c}`, 1 + (c % shards))),
    ]),
  );
  const scenarios = chosen(scenariosOf(fixture).filter((scenario) => scenario.kind !== "ceiling"));
  try {
    const publishing = new Map(SHARD_COUNTS.map((shards) => [shards, []]));
    // The layouts in alternating order run by run (1, 2, 4, then 4, 2, 1), so none always runs first.
    for (let r = 1; r <= (options.only === undefined ? runs : 0); r += 1)
      for (const [shards, config] of r % 2 === 1 ? [...configs] : [...configs].reverse()) {
        const row = await withServer(
          fixture.state,
          async (server) => {
            const health = await autocannon({ url: `${origin}/rest/v1/health`, connections, duration: seconds });
            const threadsBefore = workerdThreadTicks(server.pid);
            const publishedFrom = Date.now();
            const published = await Promise.all(
              publishers.get(shards).map((key) => publishScenario({ key }, perClient)),
            );
            const busiest = busiestThread(
              threadsBefore,
              workerdThreadTicks(server.pid),
              (Date.now() - publishedFrom) / 1000,
            );
            // Each client's clock starts when its ads are sent; all of them are active by the slowest one's end.
            const slowest = Math.max(...published.map((p) => p.seconds));
            const ads = published.reduce((sum, p) => sum + p.ads, 0);
            return {
              adsPerSecond: ads / slowest,
              perHealth: (1000 * ads) / slowest / health.requests.average,
              busiest,
              charges: published.map((p) => p.charges),
              duplicates: published.reduce((sum, p) => sum + p.marketplace.duplicateRefs, 0),
            };
          },
          config,
        );
        console.log(
          `run ${r} of ${runs}, ${shards} shard(s): ${PUBLISHING_CLIENTS} clients × ${perClient} ads at once, ` +
            `${row.adsPerSecond.toFixed(1)} ads/s (${row.perHealth.toFixed(1)} per 1,000 health req/s), busiest ` +
            `workerd thread ${(100 * row.busiest).toFixed(0)}% of a core, charged ` +
            `${row.charges.join(", ")}, references with more than one listing ${row.duplicates}`,
        );
        publishing.get(shards).push(row);
      }

    const reads = new Map();
    for (const [shards, config] of configs)
      reads.set(shards, await readScenarios(fixture, scenarios, { config, label: ` on ${shards} shard(s)` }));

    const [one, ...more] = SHARD_COUNTS;
    console.log(`\nthe read scenarios by shard count, medians of ${runs} runs (the ads are on shard 1)\n`);
    console.table(
      scenarios.map((scenario, i) => {
        const of = (shards, field) => median(reads.get(shards)[i][field]);
        return {
          scenario: scenario.name,
          ...Object.fromEntries(SHARD_COUNTS.map((shards) => [`CPU ms/req ${shards}`, of(shards, "cpuMs").toFixed(1)])),
          ...Object.fromEntries(SHARD_COUNTS.map((shards) => [`rows read ${shards}`, of(shards, "rowsRead")])),
          [`CPU ${SHARD_COUNTS.at(-1)} ÷ ${one}`]: (of(SHARD_COUNTS.at(-1), "cpuMs") / of(one, "cpuMs")).toFixed(2),
        };
      }),
    );
    if (options.only !== undefined) return;
    const publishedOne = publishing.get(one);
    console.log(
      `\npublishing from ${PUBLISHING_CLIENTS} clients at once, ${perClient} ads each, medians of ${runs} runs:`,
    );
    for (const shards of SHARD_COUNTS) {
      const rows = publishing.get(shards);
      const ratio = rows.map((row, r) => row.adsPerSecond / publishedOne[r].adsPerSecond);
      console.log(
        `  ${shards} shard(s): ${runsOf(rows.map((row) => row.adsPerSecond))} ads/s, ` +
          `${runsOf(rows.map((row) => row.perHealth))} per 1,000 health req/s, busiest workerd thread ` +
          `${runsOf(rows.map((row) => 100 * row.busiest))}% of a core` +
          (more.includes(shards) ? `; ÷ ${one} shard: ${runsOf(ratio)}` : ""),
      );
    }
  } finally {
    rmSync(fixture.state, { recursive: true, force: true });
    for (const config of configs.values()) rmSync(config, { force: true });
  }
}

/** Resident memory of the workerd processes in the server's process group, in MiB. */
function workerdRssMiB(pgid) {
  let kib = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      if (Number(fields[2]) !== pgid || !readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("workerd")) continue;
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {} // the process ended meanwhile
  }
  return kib / 1024;
}

/**
 * The V8 heap of the server's Worker isolate (the API with its Durable Objects), read through wrangler
 * dev's inspector: `sample()` reads it, `peak` is the largest used size read, in MiB.
 */
async function workerHeap() {
  const socket = new WebSocket(`ws://127.0.0.1:${inspectorPort}/ws`);
  await new Promise((resolve, reject) => {
    socket.on("open", resolve);
    socket.on("error", reject);
  });
  let id = 0;
  const answers = new Map();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    answers.get(message.id)?.(message.result);
    answers.delete(message.id);
  });
  const heap = {
    peak: 0,
    async sample() {
      id += 1;
      const asked = id;
      const result = await new Promise((resolve) => {
        answers.set(asked, resolve);
        socket.send(JSON.stringify({ id: asked, method: "Runtime.getHeapUsage" }));
      });
      const used = result.usedSize / 2 ** 20;
      heap.peak = Math.max(heap.peak, used);
      return used;
    },
    close: () => socket.close(),
  };
  return heap;
}

/** Item `n` of a bench stock: a paid-category ad placed on the website (free). */
const benchItem = (n) =>
  JSON.stringify({
    externalAdId: n,
    categoryId: 9204,
    title: `Brommer ${n}`,
    description: "Een nette brommer uit de voorraad.",
    price: { model: "fixed", price: 100_000 + n },
    targets: ["website"],
  });

/** A new activated user of the bench's client. */
async function benchUser(email) {
  const user = await api("POST", "/users/", {
    externalUserId: Date.now() % 1e9,
    lastName: "Bench",
    email,
    phone: "0201234567",
  });
  await api("POST", "/user/activate/", { userId: user.userId, activationtoken: user.activation.activationtoken });
  return user;
}

/**
 * One sync of `items` items (each on the website) as NDJSON, streamed as it is made; answers the seconds
 * from the call to the sync's end, the largest resident memory of workerd meanwhile and the largest heap
 * of the Worker's isolate (each sampled every 200 ms).
 */
async function timedSync(server, userId, items) {
  const lines = async function* () {
    for (let i = 1; i <= items; i += 1) yield `${benchItem(i)}\n`;
  };
  let peak = workerdRssMiB(server.pid);
  const heap = await workerHeap();
  const sampler = setInterval(() => {
    peak = Math.max(peak, workerdRssMiB(server.pid));
    heap.sample().catch(() => {});
  }, 200);
  const started = Date.now();
  try {
    const response = await fetch(`${origin}/rest/v1/syncs/?userId=${userId}&maxEndedPercent=100`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/x-ndjson" },
      body: ReadableStream.from(lines()).pipeThrough(new TextEncoderStream()),
      duplex: "half",
    });
    const { data, errors } = await response.json();
    if (!response.ok) throw new Error(`POST /syncs/: ${JSON.stringify(errors)}`);
    for (;;) {
      const sync = await api("GET", `/syncs/${data.syncId}`);
      if (sync.state !== "running") {
        if (sync.state !== "finished") throw new Error(`sync ${data.syncId} ${sync.state}: ${sync.reason}`);
        return { seconds: (Date.now() - started) / 1000, peakMiB: peak, heapPeakMiB: heap.peak, sync };
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    clearInterval(sampler);
    heap.close();
  }
}

/**
 * `npm run bench -- --sync`: per run, against a fresh server, the health route's requests/s, then a stock
 * of BENCH_SYNC_ITEMS items synced for a new user (each item created and placed on the website), then the
 * same stock again (unchanged): items/s of each as a ratio to the health route, and workerd's resident
 * memory before and at its peak. Then the medians.
 */
async function syncBench() {
  const items = Number(process.env.BENCH_SYNC_ITEMS ?? 10_000);
  const fixture = seededState(0);
  const rows = [];
  try {
    for (let r = 1; r <= runs; r += 1) {
      const row = await withServer(fixture.state, async (server) => {
        const health = await autocannon({ url: `${origin}/rest/v1/health`, connections, duration: seconds });
        const user = await benchUser("sync@example.nl");
        const idleMiB = workerdRssMiB(server.pid);
        const idleHeap = await workerHeap();
        const idleHeapMiB = await idleHeap.sample();
        idleHeap.close();
        const first = await timedSync(server, user.userId, items);
        const again = await timedSync(server, user.userId, items);
        if (again.sync.unchanged !== items) throw new Error(`the re-sync found ${again.sync.unchanged} unchanged`);
        return {
          health: health.requests.average,
          firstPerSecond: items / first.seconds,
          againPerSecond: items / again.seconds,
          idleMiB,
          peakMiB: Math.max(first.peakMiB, again.peakMiB),
          idleHeapMiB,
          heapPeakMiB: Math.max(first.heapPeakMiB, again.heapPeakMiB),
        };
      });
      console.log(
        `run ${r}: health ${row.health.toFixed(0)} req/s; first sync ${row.firstPerSecond.toFixed(1)} items/s ` +
          `(${(row.firstPerSecond / row.health).toFixed(3)}× health), unchanged re-sync ${row.againPerSecond.toFixed(1)} items/s ` +
          `(${(row.againPerSecond / row.health).toFixed(3)}× health); the Worker's heap ${row.idleHeapMiB.toFixed(1)} MiB before, ` +
          `${row.heapPeakMiB.toFixed(1)} MiB at most; workerd resident ${row.idleMiB.toFixed(0)} MiB before, ${row.peakMiB.toFixed(0)} MiB at most`,
      );
      rows.push(row);
    }
    console.log(`\na stock of ${items} items, medians of ${runs} runs (each run in brackets):`);
    console.log(`  health route: ${runsOf(rows.map((row) => row.health))} req/s`);
    console.log(
      `  first sync: ${runsOf(rows.map((row) => row.firstPerSecond))} items/s, ${runsOf(rows.map((row) => row.firstPerSecond / row.health))}× health`,
    );
    console.log(
      `  unchanged re-sync: ${runsOf(rows.map((row) => row.againPerSecond))} items/s, ${runsOf(rows.map((row) => row.againPerSecond / row.health))}× health`,
    );
    console.log(
      `  the Worker's isolate heap (its limit in production: 128 MiB): ${runsOf(rows.map((row) => row.idleHeapMiB))} MiB before, ${runsOf(rows.map((row) => row.heapPeakMiB))} MiB at most`,
    );
    console.log(
      `  workerd resident memory (every isolate, local D1, R2 and Durable Object storage): ${runsOf(rows.map((row) => row.idleMiB))} MiB before, ${runsOf(rows.map((row) => row.peakMiB))} MiB at most`,
    );
  } finally {
    rmSync(fixture.state, { recursive: true, force: true });
  }
}

/**
 * A dealer's feed server in the bench's process: `body` at http://127.0.0.1:<port>/, with an ETag unless
 * `validators` is false (then every fetch gets the body); counts the fetches it answered, by status.
 */
async function feedServer(body, validators) {
  const etag = '"bench-feed"';
  const answered = { 200: 0, 304: 0 };
  const server = createServer((request, response) => {
    const unchanged = validators && request.headers["if-none-match"] === etag;
    answered[unchanged ? 304 : 200] += 1;
    response.writeHead(unchanged ? 304 : 200, {
      "Content-Type": "application/x-ndjson",
      ...(validators ? { ETag: etag } : {}),
    });
    response.end(unchanged ? undefined : body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, answered, close: () => server.close() };
}

/**
 * Fetches a feed now and waits for the fetch to end, and for the sync it started (if any): its last fetch
 * and the seconds from the call to the end of both.
 */
async function timedFeedFetch(feedId) {
  const started = Date.now();
  await api("POST", `/feeds/${feedId}/run`);
  let feed = await api("GET", `/feeds/${feedId}`);
  while (feed.queued) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    feed = await api("GET", `/feeds/${feedId}`);
  }
  while (feed.lastFetch.syncId !== null && (await api("GET", `/syncs/${feed.lastFetch.syncId}`)).state === "running")
    await new Promise((resolve) => setTimeout(resolve, 250));
  return { lastFetch: feed.lastFetch, seconds: (Date.now() - started) / 1000 };
}

/**
 * `npm run bench -- --feeds`: per run, against a fresh server, the health route's requests/s; then a feed
 * of BENCH_SYNC_ITEMS items (each on the website) fetched, and the sync it starts followed to its end:
 * items/s as a ratio to the health route; then the same feed fetched again, from a server with validators
 * (a 304) and from one without (the same bytes): the requests each fetch cost and its seconds.
 */
async function feedsBench() {
  const items = Number(process.env.BENCH_SYNC_ITEMS ?? 10_000);
  const body = Array.from({ length: items }, (_, i) => benchItem(i + 1)).join("\n");
  const fixture = seededState(0);
  const rows = [];
  try {
    for (let r = 1; r <= runs; r += 1) {
      const row = await withServer(fixture.state, async () => {
        const health = await autocannon({ url: `${origin}/rest/v1/health`, connections, duration: seconds });
        const user = await benchUser("feed@example.nl");
        const unchanged = {};
        let changed = { perSecond: 0 };
        for (const validators of [true, false]) {
          const server = await feedServer(body, validators);
          try {
            const feed = await api("POST", "/feeds/", {
              userId: user.userId,
              url: server.url,
              format: "ndjson",
              schedule: { every: "daily", hour: 3, minute: 0 },
              maxEndedPercent: 100,
            });
            const first = await timedFeedFetch(feed.feedId);
            // The first feed's fetch applies the stock (a sync); the second's finds the same stock.
            if (validators) {
              if (first.lastFetch.outcome !== "fetched")
                throw new Error(`the first fetch: ${JSON.stringify(first.lastFetch)}`);
              changed = { perSecond: items / first.seconds };
            }
            const before = server.answered[200] + server.answered[304];
            const again = await timedFeedFetch(feed.feedId);
            if (again.lastFetch.outcome !== "unchanged")
              throw new Error(`the fetch again: ${JSON.stringify(again.lastFetch)}`);
            unchanged[validators ? "304" : "sameBytes"] = {
              requests: server.answered[200] + server.answered[304] - before,
              seconds: again.seconds,
            };
            await api("DELETE", `/feeds/${feed.feedId}`);
          } finally {
            server.close();
          }
        }
        return { health: health.requests.average, ...changed, unchanged };
      });
      console.log(
        `run ${r}: health ${row.health.toFixed(0)} req/s; changed feed ${row.perSecond.toFixed(1)} items/s ` +
          `(${(row.perSecond / row.health).toFixed(3)}× health); unchanged: a 304 in ${row.unchanged["304"].requests} request ` +
          `(${row.unchanged["304"].seconds.toFixed(2)} s), the same bytes in ${row.unchanged.sameBytes.requests} request ` +
          `(${row.unchanged.sameBytes.seconds.toFixed(2)} s)`,
      );
      rows.push(row);
    }
    console.log(`\na feed of ${items} items, medians of ${runs} runs (each run in brackets):`);
    console.log(`  health route: ${runsOf(rows.map((row) => row.health))} req/s`);
    console.log(
      `  changed (a sync): ${runsOf(rows.map((row) => row.perSecond))} items/s, ${runsOf(rows.map((row) => row.perSecond / row.health))}× health`,
    );
    for (const [kind, what] of [
      ["304", "unchanged, a 304"],
      ["sameBytes", "unchanged, the same bytes"],
    ])
      console.log(
        `  ${what}: ${runsOf(rows.map((row) => row.unchanged[kind].requests))} request(s), ${runsOf(rows.map((row) => row.unchanged[kind].seconds))} s`,
      );
  } finally {
    rmSync(fixture.state, { recursive: true, force: true });
  }
}

/**
 * `npm run bench -- --startup`: each Worker's startup as `wrangler check startup` profiles it (the profile's
 * span less its idle time), BENCH_RUNS rounds turn about, then the medians: the production Worker (its entry
 * alone: the body loads on first use), a one-route Hono Worker, and the production Worker with its body
 * loaded at once (what an isolate's first invocation adds).
 */
function startupBench() {
  const figures = startupRounds(["baseline", "production", "body"], runs);
  const shown = (worker) =>
    `${median(figures[worker]).toFixed(0)} ms (${figures[worker].map((ms) => ms.toFixed(0)).join(", ")})`;
  console.log(`one-route Hono Worker          ${shown("baseline")}`);
  console.log(
    `production Worker's startup    ${shown("production")}: ${(median(figures.production) / median(figures.baseline)).toFixed(2)}x the one-route Worker`,
  );
  console.log(`its body loaded at once        ${shown("body")}: what an isolate's first invocation adds`);
}

/**
 * `npm run bench -- --archive`: an archive month of 1,000 ledger rows and one of 1,000,000 (written as the
 * cron's runs write them), then per run the last 1,000-row page of each driven like every read scenario:
 * the server's CPU per page, and the large month's as a ratio of the small one's (target ≤ 2×).
 */
async function archiveBench() {
  const fixture = seededState(0);
  try {
    await withServer(fixture.state, async (server) => {
      for (const [month, rows] of [
        ["2024-01", 1_000],
        ["2024-02", 1_000_000],
      ])
        await apiCall("POST", `/bench/archive?month=${month}&rows=${rows}`);
      const page = (month, number) => ({
        name: `archive page ${number} of ${month}`,
        path: `/rest/v1/archive/ledger?month=${month}&page=${number}&itemsPerPage=1000`,
      });
      const small = [];
      const large = [];
      for (let run = 0; run < runs; run += 1) {
        small.push((await measure(page("2024-01", 1), server)).cpuMs);
        large.push((await measure(page("2024-02", 1000), server)).cpuMs);
      }
      const ratios = small.map((cpu, at) => large[at] / cpu);
      console.log(`archive page of 1,000 rows, in a 1,000-row month:     ${runsOf(small)} ms of CPU`);
      console.log(`archive page of 1,000 rows, in a 1,000,000-row month: ${runsOf(large)} ms of CPU`);
      console.log(`ratio: ${runsOf(ratios)} (target ≤ 2×)`);
    });
  } finally {
    rmSync(fixture.state, { recursive: true, force: true });
  }
}

await (options.feeds
  ? feedsBench()
  : options.archive
    ? archiveBench()
    : options.startup
      ? startupBench()
      : options.sync
        ? syncBench()
        : options.growth
          ? growthBench()
          : options.shards
            ? shardsBench()
            : sizeBench());
