import { applyD1Migrations, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { loadMinute } from "../src/cron/shardCron";
import { loadLaneWork } from "../src/jobs/clientLanes";

/**
 * The directory and both shards migrated, as npm run db:setup does, and the modules the Worker and its
 * Durable Objects load on first use (src/index.ts) loaded before any test's request, with the Worker's
 * first invocation made: in this pool the module runner fetches a module over RPC, and a request that
 * waited on another request's fetch would be cancelled as hung. Deployed, and under `npm run dev`, a
 * module's import runs in the isolate with no I/O (scripts/production-smoke.mjs sends its first requests
 * at once).
 */
async function prepareRuntime() {
  await Promise.all([
    applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS),
    applyD1Migrations(env.DB, env.TEST_MIGRATIONS),
    applyD1Migrations(env.DB_2, env.TEST_MIGRATIONS),
  ]);
  await loadLaneWork();
  await loadMinute();
  await exports.default.fetch(new Request("http://api.test/rest/v1/health"));
}

// Setup files run before each test file; a runtime that takes file after file (isolate: false in
// vitest.config.ts) keeps its globals, and is prepared once.
const runtime = globalThis as { prepared?: Promise<void> };
runtime.prepared ??= prepareRuntime();
await runtime.prepared;
