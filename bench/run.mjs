// npm run bench: starts `wrangler dev` (bench/worker.ts: the Worker plus a ceiling route) with the rate
// limit raised, drives each scenario with autocannon and prints requests/s, latency and the server's CPU
// per request next to the trivial health route, measured in the same run; then publishes 1,000 ads.
// Three runs by default, then the medians.
//   BENCH_RUNS=3 BENCH_SECONDS=10 BENCH_CONNECTIONS=10 BENCH_PORT=8788 npm run bench
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { readDevVars } from "../scripts/d1.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 3);

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const port = Number(process.env.BENCH_PORT ?? 8788);
const receiverPort = port + 2;
const origin = `http://127.0.0.1:${port}`;
const auth = { Authorization: "Bearer dev-internal-key" };
// wrangler's own log grows some 40 MB a minute under load: it goes to a directory of its own in /tmp.
// So does the local state: every bench starts from the same 20,000 ads and leaves the dev database alone.
const state = mkdtempSync(join(tmpdir(), "bench-state-"));
const env = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CI: "true",
  WRANGLER_LOG_PATH: mkdtempSync(join(tmpdir(), "bench-wrangler-logs-")),
  D1_PERSIST_TO: state,
};

// The local ceilings of a page that needs D1: one bare query of as many ad rows as the page shows, behind
// the same authentication, rate limit and D1 session (bench/worker.ts). Each page is measured against its own.
const ceiling = {
  name: "ceiling: one bare D1 query of 25 ads",
  path: "/rest/v1/bench/ceiling?rows=25&page=40",
  headers: auth,
};
const ceiling500 = {
  name: "ceiling: one bare D1 query of 500 ads",
  path: "/rest/v1/bench/ceiling?rows=500&page=10",
  headers: auth,
};
const scenarios = [
  { name: "GET /rest/v1/health (baseline)", path: "/rest/v1/health" },
  { name: "GET /rest/v1/client/ (auth + rate limit)", path: "/rest/v1/client/", headers: auth },
  ceiling,
  ceiling500,
  {
    name: "GET /ads/ 25 full ads of 20,000",
    path: "/rest/v1/ads/?itemsPerPage=25&page=40",
    headers: auth,
    ceiling,
  },
  {
    name: "GET /ads/ simple page of 500",
    path: "/rest/v1/ads/?simple=true&itemsPerPage=500&page=10",
    headers: auth,
    ceiling: ceiling500,
  },
  {
    name: "GET /ads/ keyword search",
    path: "/rest/v1/ads/?searchkeyword=fiets&itemsPerPage=25",
    headers: auth,
    ceiling,
  },
  {
    name: "GET /ads/ attribute search",
    path:
      "/rest/v1/ads/?categoryId=9301&itemsPerPage=25" +
      "&searchattributes[0][portal]=portal_a&searchattributes[0][key]=condition&searchattributes[0][value_equals]=nieuw",
    headers: auth,
    ceiling,
  },
];

/** The bench's own local D1: migrations, the dev clients, then the 20,000 benchmark ads. */
function setUp() {
  const wrangler = (args, stdio = "inherit") => {
    const run = spawnSync("npx", ["wrangler", ...args, "--local", "--persist-to", state], { env, stdio });
    if (run.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed`);
  };
  wrangler(["d1", "migrations", "apply", "DB"], ["ignore", "ignore", "inherit"]);
  const seed = spawnSync("node", ["scripts/seed.mjs"], { env, stdio: "inherit" });
  if (seed.status !== 0) throw new Error("seeding the dev clients failed");
  wrangler(["d1", "execute", "DB", "--file", "bench/seed-ads.sql"], ["ignore", "ignore", "inherit"]);
}

function startServer() {
  return spawn(
    "npx",
    [
      "wrangler",
      "dev",
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
    ],
    { env, stdio: ["ignore", "ignore", "inherit"], detached: true },
  );
}

/**
 * Runs `work` against a fresh `wrangler dev`: every scenario gets its own server, because wrangler dev's
 * local proxy keeps a socket per request and runs out of file descriptors after some 20,000 requests.
 */
async function withServer(work) {
  const server = startServer();
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

const api = async (method, path, body) => {
  const response = await fetch(`${origin}/rest/v1${path}`, {
    method,
    headers: { ...auth, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!json.result) throw new Error(`${method} ${path}: ${JSON.stringify(json.errors)}`);
  return json.data;
};

/** POST /publish/batch of 1,000 ads to portal_a (the simulator); time until every one is active. */
async function publishScenario(count = Number(process.env.BENCH_PUBLISH_ADS ?? 1000)) {
  const user = await api("POST", "/users/", {
    externalUserId: Date.now(),
    lastName: "Bench",
    email: "publish@example.nl",
    phone: "0201234567",
  });
  await api("POST", "/user/activate/", { userId: user.userId, activationtoken: user.activation.activationtoken });
  const { redirect } = await api("POST", `/oauth/${user.userId}/portal_a/`);
  // A marketplace account of its own, made on the consent page's sign-up form (its hidden fields are
  // the authorization request's parameters), so the simulator's counts are this run's alone.
  const signup = new URLSearchParams(new URL(redirect).search);
  signup.set("username", `bench-${Date.now()}`);
  signup.set("password", "bench-password");
  const approval = await fetch(`${origin}/simulator/portal_a/signup`, {
    method: "POST",
    body: signup,
    redirect: "manual",
  });
  const callback = new URL(approval.headers.get("Location"));
  await api("PUT", `/oauth/${user.userId}/portal_a/`, {
    code: callback.searchParams.get("code"),
    state: callback.searchParams.get("state"),
  });
  const adIds = [];
  for (let i = 0; i < count; i += 20) {
    const created = await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, (_, j) =>
        api("POST", "/ads/", {
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
  const [ad] = await api("GET", `/ads/?adId=${adIds[0]}`);
  const price = ad.prices.portal_a[0].priceTotal;
  const credit = price * adIds.length * 2;
  await api("POST", "/wallet/", { userId: user.userId, amount: credit, description: "benchmark" });
  const started = Date.now();
  await api("POST", "/publish/batch", { userId: user.userId, adId: adIds, portal: "portal_a" });
  const queuedAfter = (Date.now() - started) / 1000;
  for (;;) {
    const statuses = await api("POST", "/status/", { userId: user.userId, adId: adIds, itemsPerPage: 1000 });
    const active = statuses.filter((s) => s.portals[0].publish.active).length;
    if (active === adIds.length) break;
    if (Date.now() - started > 600_000) throw new Error(`only ${active} of ${adIds.length} active after 10 minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const seconds = (Date.now() - started) / 1000;
  // What it cost and what reached the marketplace: one charge and one live listing per ad.
  const wallet = await api("GET", `/wallet/${user.userId}`);
  const charges = (credit - wallet.balance) / price;
  const connection = await api("GET", `/oauth/${user.userId}/portal_a/`);
  // The simulator's control route is the operator's: the portal's OAuth client credentials (.dev.vars).
  const vars = readDevVars();
  const operator = btoa(`${vars.PORTAL_A_CLIENT_ID ?? "classified-ads-dev"}:${vars.PORTAL_A_CLIENT_SECRET}`);
  const marketplace = await (
    await fetch(`${origin}/simulator/portal_a/control/accounts/${connection.externalUserId}`, {
      headers: { Authorization: `Basic ${operator}` },
    })
  ).json();
  return { ads: adIds.length, queuedAfter, seconds, adsPerSecond: adIds.length / seconds, charges, marketplace };
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

async function measure(scenario, server) {
  // One request first, so the measurement does not pay for compilation.
  await fetch(origin + scenario.path, { headers: scenario.headers });
  const cpuBefore = groupCpuSeconds(server.pid);
  const result = await autocannon({
    url: origin + scenario.path,
    headers: scenario.headers,
    connections,
    duration: seconds,
  });
  const requests = result.requests.total;
  return {
    scenario: scenario.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuMs: ((groupCpuSeconds(server.pid) - cpuBefore) * 1000) / Math.max(requests, 1),
    non2xx: result.non2xx + result.errors,
  };
}

const report = (label, publish) => {
  console.log(
    `\n${label}: POST /publish/batch of ${publish.ads} ads to portal_a (simulator) answered in ${publish.queuedAfter.toFixed(1)} s, ` +
      `all active after ${publish.seconds.toFixed(1)} s = ${publish.adsPerSecond.toFixed(1)} ads/s`,
  );
  console.log(
    `placements charged: ${publish.charges}; at the simulator: ${publish.marketplace.listings} listings, ` +
      `${publish.marketplace.online} online, ${publish.marketplace.duplicateRefs} references with more than one listing`,
  );
};

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

setUp();
const readRuns = [];
const publishRuns = [];
for (let r = 1; r <= runs; r += 1) {
  const rows = [];
  for (const scenario of scenarios) rows.push(await withServer((server) => measure(scenario, server)));
  const base = rows[0];
  console.log(
    `\nrun ${r} of ${runs}: ${seconds}s per scenario, ${connections} connections, a fresh wrangler dev each\n`,
  );
  console.table(
    rows.map((row) => ({
      scenario: row.scenario,
      "req/s": Math.round(row.rps),
      "p50 ms": row.p50,
      "p99 ms": row.p99,
      "req/s vs health": (row.rps / base.rps).toFixed(2),
      "server CPU ms/req": row.cpuMs.toFixed(1),
      "non-2xx": row.non2xx,
    })),
  );
  readRuns.push(rows.map((row) => ({ ...row, ratio: row.rps / base.rps })));
  const publish = await withServer(() => publishScenario());
  report(`run ${r} of ${runs}`, publish);
  publishRuns.push(publish);
}

console.log(`\nmedians of ${runs} runs (each value in brackets is one run)\n`);
/** The median of the runs, then each run. */
const runsOf = (values) => `${median(values).toFixed(2)} (${values.map((v) => v.toFixed(2)).join(", ")})`;
console.table(
  scenarios.map((scenario, i) => ({
    scenario: scenario.name,
    "req/s vs health": runsOf(readRuns.map((rows) => rows[i].ratio)),
    // Only the pages have a ceiling: the bare query of as many rows as they show.
    "of its ceiling": scenario.ceiling
      ? runsOf(readRuns.map((rows) => rows[i].ratio / rows[scenarios.indexOf(scenario.ceiling)].ratio))
      : "",
    "server CPU ms/req": runsOf(readRuns.map((rows) => rows[i].cpuMs)),
  })),
);
console.log(
  `publishing ${publishRuns[0].ads} ads: POST answered in ${runsOf(publishRuns.map((p) => p.queuedAfter))} s, ` +
    `${runsOf(publishRuns.map((p) => p.adsPerSecond))} ads/s until all active; charged ` +
    `${publishRuns.map((p) => p.charges).join(", ")}; listings at the simulator ` +
    `${publishRuns.map((p) => p.marketplace.listings).join(", ")}, references with more than one listing ` +
    `${publishRuns.map((p) => p.marketplace.duplicateRefs).join(", ")}`,
);

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

// Once more with a webhook endpoint registered (the bench runs its own receiver).
const receiver = startReceiver();
try {
  const withWebhook = await withServer(async () => {
    const { webhookId } = await api("POST", "/webhooks/", { url: `http://127.0.0.1:${receiverPort}/hooks` });
    try {
      return await publishScenario();
    } finally {
      // The local database outlives the bench: the next one's runs must be without.
      await api("DELETE", `/webhooks/${webhookId}`);
    }
  });
  report("with one webhook endpoint", withWebhook);
  console.log(`webhook deliveries received by then: ${receiver.received.count}`);
} finally {
  receiver.close();
  rmSync(state, { recursive: true, force: true });
}
