// npm run bench: starts `wrangler dev` with the rate limit raised, drives each scenario with autocannon
// and prints requests/s and latency next to the trivial health route, measured in the same run.
//   BENCH_SECONDS=10 BENCH_CONNECTIONS=10 BENCH_PORT=8788 npm run bench
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import autocannon from "autocannon";

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const port = Number(process.env.BENCH_PORT ?? 8788);
const receiverPort = port + 2;
const origin = `http://127.0.0.1:${port}`;
const auth = { Authorization: "Bearer dev-internal-key" };
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };

const scenarios = [
  { name: "GET /rest/v1/health (baseline)", path: "/rest/v1/health" },
  { name: "GET /rest/v1/client/ (auth + rate limit)", path: "/rest/v1/client/", headers: auth },
  { name: "GET /ads/ 25 full ads of 20,000", path: "/rest/v1/ads/?itemsPerPage=25&page=40", headers: auth },
  {
    name: "GET /ads/ simple page of 500",
    path: "/rest/v1/ads/?simple=true&itemsPerPage=500&page=10",
    headers: auth,
  },
  { name: "GET /ads/ keyword search", path: "/rest/v1/ads/?searchkeyword=fiets&itemsPerPage=25", headers: auth },
];

/** Local D1 migrations and seed, then the 20,000 benchmark ads: once per run. */
function setUp() {
  const setup = spawnSync("npm", ["run", "db:setup", "--silent"], { env, stdio: "inherit" });
  if (setup.status !== 0) throw new Error("db:setup failed");
  const seed = spawnSync("npx", ["wrangler", "d1", "execute", "DB", "--local", "--file", "bench/seed-ads.sql"], {
    env,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (seed.status !== 0) throw new Error("seeding the benchmark ads failed");
}

function startServer() {
  return spawn(
    "npx",
    [
      "wrangler",
      "dev",
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
    return await work();
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
  const marketplace = await (
    await fetch(`${origin}/simulator/portal_a/control/accounts/${connection.externalUserId}`)
  ).json();
  return { ads: adIds.length, queuedAfter, seconds, adsPerSecond: adIds.length / seconds, charges, marketplace };
}

const run = (scenario) =>
  autocannon({ url: origin + scenario.path, headers: scenario.headers, connections, duration: seconds });

setUp();
const rows = [];
for (const scenario of scenarios) {
  const result = await withServer(async () => {
    // One request first, so the measurement does not pay for compilation.
    await fetch(origin + scenario.path, { headers: scenario.headers });
    return run(scenario);
  });
  rows.push({
    scenario: scenario.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  });
}
const base = rows[0];
console.log(`\n${seconds}s per scenario, ${connections} connections, a fresh wrangler dev each, on this machine\n`);
console.table(
  rows.map((r) => ({
    scenario: r.scenario,
    "req/s": Math.round(r.rps),
    "p50 ms": r.p50,
    "p99 ms": r.p99,
    "req/s vs health": (r.rps / base.rps).toFixed(2),
    "p50 vs health": (r.p50 / Math.max(base.p50, 1)).toFixed(2),
    "non-2xx": r.non2xx,
  })),
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

const report = (label, publish) => {
  console.log(
    `\n${label}: POST /publish/batch of ${publish.ads} ads to portal_a (simulator) answered in ${publish.queuedAfter.toFixed(1)} s, ` +
      `all active after ${publish.seconds.toFixed(1)} s = ${publish.adsPerSecond.toFixed(1)} ads/s ` +
      `(${(publish.adsPerSecond / base.rps).toFixed(3)} × the health route's ${Math.round(base.rps)} req/s in this run)`,
  );
  console.log(
    `placements charged: ${publish.charges}; at the simulator: ${publish.marketplace.listings} listings, ` +
      `${publish.marketplace.online} online, ${publish.marketplace.duplicateRefs} references with more than one listing`,
  );
};

report("without webhooks", await withServer(() => publishScenario()));
const receiver = startReceiver();
try {
  const withWebhook = await withServer(async () => {
    const { webhookId } = await api("POST", "/webhooks/", { url: `http://127.0.0.1:${receiverPort}/hooks` });
    try {
      return await publishScenario();
    } finally {
      // The local database outlives the run: the next run's "without" must be without.
      await api("DELETE", `/webhooks/${webhookId}`);
    }
  });
  report("with one webhook endpoint", withWebhook);
  console.log(`webhook deliveries received by then: ${receiver.received.count}`);
} finally {
  receiver.close();
}
