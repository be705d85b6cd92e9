import { applyD1Migrations, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { loadMinute } from "../src/cron/shardCron";
import { loadLaneWork } from "../src/jobs/clientLanes";

// Setup files run before each test file; applying is idempotent. The directory and both shards, as
// npm run db:setup does.
await Promise.all([
  applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS),
  applyD1Migrations(env.DB, env.TEST_MIGRATIONS),
  applyD1Migrations(env.DB_2, env.TEST_MIGRATIONS),
]);

// The modules the Worker and its Durable Objects load on first use (src/index.ts), loaded before any
// test's request, and the Worker's first invocation made: in this pool the module runner fetches a module
// over RPC, and a request that waited on another request's fetch would be cancelled as hung. Deployed, and
// under `npm run dev`, a module's import runs in the isolate with no I/O (scripts/production-smoke.mjs
// sends its first requests at once).
await loadLaneWork();
await loadMinute();
await exports.default.fetch(new Request("http://api.test/rest/v1/health"));
