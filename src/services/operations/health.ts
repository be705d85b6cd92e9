import { sql } from "drizzle-orm";
import { idSpaceLeased } from "../../db/ids";
import { tokensToReseal } from "../publishing/connections";
import type { ServiceContext } from "../shared/context";

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

/**
 * Readiness: each dependency is touched once (D1 a trivial query, R2 a head, the queue a `ping` message
 * the consumer acknowledges, the rate-limit Durable Object a call) and answers with its latency; plus the
 * deployed commit, the last migration applied, how many connections still hold tokens sealed with a
 * previous key, and how much of each table's id space the client groups' blocks have taken.
 */
export async function readiness({ db, env }: ServiceContext) {
  const [d1, r2, queue, rateLimiter] = await Promise.all([
    timed(() => db.run(sql`SELECT 1`)),
    timed(() => env.MEDIA.head("health/probe")),
    timed(() => env.JOBS.send({ kind: "ping" })),
    timed(() => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName("health")).ping()),
  ]);
  const [migration, reseal, idSpace] = await Promise.all([
    db
      .all<{ name: string }>(sql`SELECT name FROM d1_migrations ORDER BY id DESC LIMIT 1`)
      .then((rows) => rows[0]?.name ?? null)
      .catch(() => null),
    d1.ok ? tokensToReseal({ db, env }).catch(() => null) : Promise.resolve(null),
    d1.ok ? idSpaceLeased(db).catch(() => null) : Promise.resolve(null),
  ]);
  const checks = { d1, r2, queue, rateLimiter };
  return {
    ready: Object.values(checks).every((check) => check.ok),
    version: env.GIT_COMMIT ?? "development",
    migration,
    tokensToReseal: reseal,
    idSpace,
    checks,
  };
}
