import { applyD1Migrations, env } from "cloudflare:test";

// Setup files run before each test file; applying is idempotent. The directory and both shards, as
// npm run db:setup does.
await Promise.all([
  applyD1Migrations(env.DIRECTORY, env.TEST_DIRECTORY_MIGRATIONS),
  applyD1Migrations(env.DB, env.TEST_MIGRATIONS),
  applyD1Migrations(env.DB_2, env.TEST_MIGRATIONS),
]);
