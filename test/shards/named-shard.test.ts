import { env } from "cloudflare:test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { onShard, shardDatabase } from "../../src/db/shards";
import type { Env } from "../../src/env";
import { jobContext } from "../../src/services/shared";

/**
 * The shard is named, never assumed (src/env.ts, src/db/shards.ts): the code's bindings have no shard's
 * database, so work that reads "the current database" does not compile (`npm run typecheck` holds the
 * `@ts-expect-error` lines below to that), and work on a shard carries which shard and why.
 */
describe("a shard named, never assumed", () => {
  it("reaches a shard's database only through a resolver that names it and why", async () => {
    const bindings: Env = env;
    // @ts-expect-error: the code's bindings have no shard's database to assume
    expect(bindings.DB).toBeDefined();
    // @ts-expect-error: nor any other shard's
    expect(bindings.DB_2).toBeDefined();
    // @ts-expect-error: a job's context needs a named shard, not the bindings
    expect(() => jobContext(bindings)).toThrow();
    // @ts-expect-error: a shard is named with why the work runs there
    onShard(bindings, 2);
    const onTwo = onShard(bindings, 2, "the group's");
    expect(onTwo.shard).toMatchObject({ number: 2, why: "the group's" });
    // Its database is shard 2's: what it writes is there, not on shard 1.
    const marker = `named-${crypto.randomUUID()}`;
    await jobContext(onTwo).db.run(sql`INSERT INTO cache_revisions (scope, revision) VALUES (${marker}, 1)`);
    const on = async (d1: D1Database) =>
      (
        await d1
          .prepare("SELECT count(*) AS n FROM cache_revisions WHERE scope = ?")
          .bind(marker)
          .first<{ n: number }>()
      )?.n;
    expect(await on(shardDatabase(bindings, 2))).toBe(1);
    expect(await on(shardDatabase(bindings, 1))).toBe(0);
    expect(() => shardDatabase(bindings, 9)).toThrow("no binding for shard 9");
  });
});
