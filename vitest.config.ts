import { execFileSync } from "node:child_process";
import { statfsSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { imageOrigin, TEST_IMAGE_MAX_BYTES } from "./test/fixtures/imageOrigin.ts";
import { DEFAULT_TEST_TIMEOUT_MS } from "./test/harness/timeouts.ts";

/** The test secrets of our OAuth client, which the simulator registers too. */
const CLIENT_SECRETS = {
  PORTAL_A_CLIENT_SECRET: "test-portal-a-secret",
  PORTAL_B_CLIENT_SECRET: "test-portal-b-secret",
};

/**
 * The marketplace simulator as an auxiliary worker: its own Worker, bundled by wrangler from
 * simulator/wrangler.toml (an auxiliary worker runs built JavaScript), with that configuration's
 * bindings and the test secrets. The API reaches it through its MARKETPLACE service binding.
 */
function marketplaceSimulator() {
  const config = path.join(import.meta.dirname, "simulator/wrangler.toml");
  const outdir = path.join(import.meta.dirname, ".wrangler/simulator-bundle");
  execFileSync(
    path.join(import.meta.dirname, "node_modules/.bin/wrangler"),
    ["deploy", "--dry-run", "--config", config, "--outdir", outdir],
    { stdio: "ignore", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  const { workerOptions } = unstable_getMiniflareWorkerOptions(config);
  // wrangler's types leave the bindings `unknown`; from a configuration they are its vars, by name.
  const vars = workerOptions.bindings as Record<string, unknown> | undefined;
  // Its module rules are for bundling the TypeScript sources; the auxiliary worker runs the bundle.
  const { modulesRules: _bundling, ...options } = workerOptions as typeof workerOptions & { modulesRules?: unknown };
  return {
    ...options,
    name: "marketplace-simulator",
    // Module names are taken relative to the root, and the bundle sits outside simulator/.
    rootPath: outdir,
    modules: true,
    scriptPath: path.join(outdir, "index.js"),
    bindings: { ...vars, ...CLIENT_SECRETS, SIMULATOR_DEMO_PASSWORD: "demo-test-password" },
  };
}

/**
 * The queues' consumers as wrangler.toml declares them, with a batch that closes after 50 ms instead
 * of a second: every queue hop of a test would otherwise wait out the production batch window.
 */
function quickQueueConsumers() {
  const { queueConsumers } = unstable_getMiniflareWorkerOptions(
    path.join(import.meta.dirname, "wrangler.toml"),
  ).workerOptions;
  return Object.fromEntries(
    Object.entries(queueConsumers ?? {}).map(([queue, consumer]) => [queue, { ...consumer, maxBatchTimeout: 0.05 }]),
  );
}

/**
 * The runtime keeps its local D1, R2 and Durable Objects as SQLite files in a folder of the OS's temporary
 * directory. On Linux, with room in memory, that folder goes to /dev/shm (unless TMPDIR names one): on
 * disk every commit of every test is a write, and two files took a fifth longer (26 s against 32 s).
 */
const MEMORY_FOLDER = "/dev/shm";
const MEMORY_ROOM_BYTES = 4 * 1024 ** 3;
function storageInMemory() {
  if (process.env.TMPDIR) return;
  try {
    const { bavail, bsize } = statfsSync(MEMORY_FOLDER);
    if (bavail * bsize >= MEMORY_ROOM_BYTES) process.env.TMPDIR = MEMORY_FOLDER;
  } catch {
    // No such folder (not Linux): the OS's temporary directory as it is.
  }
}
storageInMemory();

const neighbours = process.env.TEST_SUITE === "neighbours";
/** The suite of a platform of four shards (npm run test:four-shards): DB_3 and DB_4 beside wrangler.toml's. */
const fourShards = process.env.TEST_SUITE === "four-shards";
const suite = neighbours ? "neighbours" : fourShards ? "fourShards" : undefined;

/**
 * The neighbour files, longest first (some 30, 29, 26 and 17 s; the rest 1 to 13 s), so that no long
 * file starts last beside nothing. Without the timings of an earlier run (a fresh clone has none) vitest
 * starts the largest files first, and the two longest, small, started last.
 */
const LONGEST_NEIGHBOURS = [
  "test/neighbours/shared-queue.test.ts",
  "test/neighbours/many-clients.test.ts",
  "test/neighbours/webhook-lanes.test.ts",
  "test/neighbours/preflight.test.ts",
];
class LongestNeighboursFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]) {
    const rank = (file: TestSpecification) => {
      const index = LONGEST_NEIGHBOURS.findIndex((name) => file.moduleId.endsWith(name));
      return index === -1 ? LONGEST_NEIGHBOURS.length : index;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/** wrangler.toml's D1 databases, and with the four-shard suite two more shards. */
function d1Databases(): Record<string, string | { id: string }> {
  const declared = unstable_getMiniflareWorkerOptions(path.join(import.meta.dirname, "wrangler.toml")).workerOptions
    .d1Databases as Record<string, { id: string }>;
  return fourShards ? { ...declared, DB_3: "test-shard-3", DB_4: "test-shard-4" } : declared;
}

/**
 * The files that read what a whole shard holds and compare it with what they wrote (an internal client's
 * lists and counts across every user, deep pages of every shard's ads, the cron's every due task, the update
 * outbox a request flushes by turns of client, the rows written per write, every row's id block, a shard's
 * newest event), or change what every client reads (the catalogue's prices, the clock, the key that seals
 * every connection's tokens). Each runs in a runtime of its own, whose shards hold its own rows only.
 */
const OWN_RUNTIME = [
  "test/accounts/id-blocks.test.ts",
  "test/adViews/tallies.test.ts",
  "test/api/errors.test.ts",
  "test/api/maxima.test.ts",
  "test/api/write-cost.test.ts",
  "test/operations/key-rotation.test.ts",
  "test/shards/deep-pages.test.ts",
  "test/shards/move-ids.test.ts",
  "test/shards/shards.test.ts",
];

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  const directoryMigrations = await readD1Migrations(path.join(import.meta.dirname, "migrations/directory"));
  return {
    plugins: [
      cloudflareTest({
        main: "./src/index.ts",
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          workers: [marketplaceSimulator()],
          outboundService: imageOrigin,
          queueConsumers: quickQueueConsumers(),
          d1Databases: d1Databases(),
          bindings: {
            TEST_MIGRATIONS: migrations,
            TEST_DIRECTORY_MIGRATIONS: directoryMigrations,
            LOG_REQUESTS: "false",
            // Test files share one client IP; the per-IP limit has its own test with its own limits.
            RATE_LIMIT_IP_RPS: "100000",
            RATE_LIMIT_IP_BURST: "100000",
            // Webhook retries at once, so a test sees every attempt.
            WEBHOOK_RETRY_DELAYS: "0,0,0,0,0,0,0",
            // A breaker's pause short enough for a test to see it end.
            WEBHOOK_PAUSE_SECONDS: "3",
            TOKEN_ENCRYPTION_KEY: "jNTSQ8OK8601Vs8P7FfF3lECUzC4iZNgugcMubXVMWE=",
            ...CLIENT_SECRETS,
            MEDIA_BASE_URL: "http://api.test/media/",
            WEBSITE_URL: "https://www.example.test/login/",
            MEDIA_ORIGIN: "http://images.test/media-origin/",
            IMAGE_MAX_BYTES: String(TEST_IMAGE_MAX_BYTES),
            // The model-based test's length and seed (npm run test:model runs it longer).
            MODEL_RUNS: process.env.MODEL_RUNS ?? "",
            MODEL_SEED: process.env.MODEL_SEED ?? "",
            MODEL_WITHOUT: process.env.MODEL_WITHOUT ?? "",
            // The dry run's differential test likewise (npm run test:preflight).
            PREFLIGHT_RUNS: process.env.PREFLIGHT_RUNS ?? "",
            PREFLIGHT_SEED: process.env.PREFLIGHT_SEED ?? "",
            // The rows-written table for npm run bench (test/api/write-cost.test.ts prints it when set).
            WRITE_COST_REPORT: process.env.WRITE_COST_REPORT ?? "",
          },
        },
      }),
    ],
    test: {
      setupFiles: ["./test/setup.ts"],
      // Files run side by side, two per core (vitest's default leaves a 2-core machine one): part of a
      // file's time is waiting on workerd or on a timer (a move's settling). The timed neighbour suite
      // runs a file per core, each in a runtime of its own: a file's clients share no lane, queue or
      // Durable Object with another's, only the machine, whose load falls on B alone and beside A alike
      // (both are timed in the same file).
      maxWorkers: neighbours ? availableParallelism() : 2 * availableParallelism(),
      ...(neighbours ? { sequence: { sequencer: LongestNeighboursFirst } } : {}),
      // What the Worker logs shows for a failing test only; the timed suites print their figures.
      silent: suite ? false : ("passed-only" as const),
      // A hang guard, not a speed bound (test/harness/timeouts.ts).
      testTimeout: DEFAULT_TEST_TIMEOUT_MS,
      // The noisy-neighbour suite (timed, test/neighbours) and the four-shard one (test/fourShards) run on
      // their own, each file in a runtime of its own: npm run test:neighbours, npm run test:four-shards.
      ...(suite
        ? { include: [`test/${suite}/**/*.test.ts`] }
        : {
            projects: [
              // A runtime (workerd, its D1, R2, queues and Durable Objects) runs file after file: a file
              // finds the rows of those before it, as a request in production finds other clients' rows.
              // Starting one per file cost 93 starts of some 4 s each and slowed every file beside them.
              {
                extends: true,
                test: {
                  name: "shared",
                  include: ["test/**/*.test.ts"],
                  exclude: [...configDefaults.exclude, "test/neighbours/**", "test/fourShards/**", ...OWN_RUNTIME],
                  isolate: false,
                },
              },
              { extends: true, test: { name: "own-runtime", include: OWN_RUNTIME, isolate: true } },
            ],
          }),
    },
  };
});
