import { sql } from "drizzle-orm";
import { getDb } from "../../db/client";
import { idSpaceLeased } from "../../db/ids";
import { onShard, shardDatabase, shardNumbers } from "../../db/shards";
import type { Env } from "../../env";
import { tokensToReseal } from "../publishing/connections";

export interface DependencyCheck {
  ok: boolean;
  latencyMs: number;
  error?: string;
}

async function timed(probe: () => Promise<unknown>): Promise<DependencyCheck> {
  const startedAt = Date.now();
  try {
    await probe();
    return { ok: true, latencyMs: Date.now() - startedAt };
  } catch (error) {
    return {
      ok: false,
      latencyMs: Date.now() - startedAt,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

/** One shard's readiness: a trivial query, its last migration, its tokens under an old key and its size. */
async function shardReadiness(env: Env, shard: number) {
  const d1 = shardDatabase(env, shard);
  const db = getDb(d1);
  let sizeBytes: number | null = null;
  const check = await timed(async () => {
    sizeBytes = (await d1.prepare("SELECT 1").run()).meta.size_after ?? null;
  });
  const [migration, tokens] = await Promise.all([
    db
      .all<{ name: string }>(sql`SELECT name FROM d1_migrations ORDER BY id DESC LIMIT 1`)
      .then((rows) => rows[0]?.name ?? null)
      .catch(() => null),
    check.ok
      ? tokensToReseal({ db, env: onShard(env, shard, "every shard in turn") }).catch(() => null)
      : Promise.resolve(null),
  ]);
  return { shard, ...check, migration, tokensToReseal: tokens, sizeBytes };
}

/**
 * Readiness: each dependency is touched once (the directory and every shard a trivial query, R2 a
 * head, the queue a `ping` message the consumer acknowledges, the rate-limit Durable Object a call) and
 * answers with its latency; plus the deployed commit, each shard's report (the last migration applied,
 * connections still holding tokens sealed with a previous key, its size), and how much of each table's
 * id space the client groups' blocks have taken. The top-level `migration` is the least advanced shard's.
 */
export async function readiness({ env }: { env: Env }) {
  const [directory, shards, r2, queue, rateLimiter] = await Promise.all([
    timed(() => env.DIRECTORY.prepare("SELECT 1").run()),
    Promise.all(shardNumbers(env).map((shard) => shardReadiness(env, shard))),
    timed(() => env.MEDIA.head("health/probe")),
    timed(() => env.JOBS.send({ kind: "ping" })),
    timed(() => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName("health")).ping()),
  ]);
  const failing = shards.find((shard) => !shard.ok);
  const d1: DependencyCheck = {
    ok: directory.ok && !failing,
    latencyMs: Math.max(directory.latencyMs, ...shards.map((shard) => shard.latencyMs)),
    ...(failing
      ? { error: `shard ${failing.shard}: ${failing.error}` }
      : directory.error
        ? { error: directory.error }
        : {}),
  };
  const idSpace = directory.ok ? await idSpaceLeased(getDb(env.DIRECTORY)).catch(() => null) : null;
  const migrations = shards.map((shard) => shard.migration);
  const reseal = shards.map((shard) => shard.tokensToReseal);
  const checks = { d1, directory, r2, queue, rateLimiter };
  return {
    ready: Object.values(checks).every((check) => check.ok),
    version: env.GIT_COMMIT ?? "development",
    migration: migrations.includes(null) ? null : ([...(migrations as string[])].sort()[0] ?? null),
    tokensToReseal: reseal.includes(null) ? null : (reseal as number[]).reduce((sum, n) => sum + n, 0),
    idSpace,
    shards,
    checks,
  };
}
