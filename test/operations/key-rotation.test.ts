import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { advanceMove, beginMove } from "../../src/db/moves";
import { shardDatabase } from "../../src/db/shards";
import type { Env } from "../../src/env";
import { open } from "../../src/lib/secretBox";
import { reencryptTokens, tokensToReseal } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { connectedSeller } from "../harness/marketplace";
import { confirmed, failingAt, groupOnShard1, moved, switchedLongAgo } from "../harness/moves";

/**
 * Rotating the key that seals marketplace tokens. Each run re-seals every connection of a shard with a
 * key of its own, which the Worker of the runtime does not hold: the file runs in a runtime of its own
 * (vitest.config.ts, OWN_RUNTIME).
 */

const oldKey = env.TOKEN_ENCRYPTION_KEY as string;
const newKey = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
/** The Worker's bindings mid-rotation: a new key, and the one the tokens were sealed with as the previous. */
const rotating = { ...env, TOKEN_ENCRYPTION_KEY: newKey, TOKEN_ENCRYPTION_KEY_PREVIOUS: oldKey } as Env;
const onlyNewKey = { TOKEN_ENCRYPTION_KEY: newKey };

/** A user's sealed tokens as shard `shard` stores them. */
const storedTokens = (userId: number, shard = 1) =>
  shardDatabase(env, shard)
    .prepare("SELECT access_token AS access, refresh_token AS refresh FROM portal_connections WHERE user_id = ?")
    .bind(userId)
    .first<{ access: string; refresh: string }>();

/** The cron's part, run until it finds nothing more to re-seal on the shard (a bounded number per run). */
async function resealAll(shard = 1) {
  while ((await reencryptTokens(jobContext(onTestShard(rotating, shard)), { limit: 50 })) > 0);
}

describe("token key rotation", () => {
  it("both keys open tokens during the overlap; the cron re-seals them with the new key", async () => {
    const { key, internalKey } = await twoClients();
    const userId = await connectedSeller(key, internalKey);
    const before = await storedTokens(userId);
    const accessToken = await open(before?.access as string, env);
    expect(await open(before?.access as string, rotating)).toBe(accessToken);
    expect(await tokensToReseal(jobContext(onTestShard(rotating)))).toBeGreaterThan(0);

    await resealAll();
    const after = await storedTokens(userId);
    expect(after?.access).not.toBe(before?.access);
    expect(await open(after?.access as string, onlyNewKey)).toBe(accessToken);
    await expect(open(after?.access as string, { TOKEN_ENCRYPTION_KEY: oldKey })).rejects.toThrow();
    expect(await tokensToReseal(jobContext(onTestShard(rotating)))).toBe(0);
    // Without a previous key there is nothing to do.
    expect(await reencryptTokens(jobContext(onTestShard()), { limit: 50 }), "nothing without a previous key").toBe(0);
  });

  it("leaves a moving group's tokens to the move, and the shard it moves to re-seals them", async () => {
    const moving = await groupOnShard1();
    const settled = await groupOnShard1();
    const settledSeller = await connectedSeller(settled.key, settled.internalKey);
    // A runner died in the switch, after fencing the moving group's writes on shard 1.
    expect(await beginMove(env.DIRECTORY, { group: moving.group, from: 1, to: 2 })).toBe(true);
    const diesSwitching = {
      directory: failingAt(env.DIRECTORY, /moving_to = NULL/),
      source: env.DB,
      target: env.DB_2,
    };
    await expect(advanceMove(diesSwitching, moving.group, { settleMs: 0, budgetMs: 60_000 })).rejects.toThrow(
      "the runner died",
    );
    const fenced = await storedTokens(moving.sellerId);
    const settledBefore = await storedTokens(settledSeller);

    // Shard 1's cron re-seals its other group's tokens and leaves the fenced ones as they are.
    await resealAll();
    expect(await storedTokens(moving.sellerId)).toEqual(fenced);
    const resealed = await storedTokens(settledSeller);
    expect(resealed?.access).not.toBe(settledBefore?.access);
    expect(await open(resealed?.access as string, onlyNewKey)).toBe(await open(settledBefore?.access as string, env));
    // They still count: the previous key may not go yet.
    expect(await tokensToReseal(jobContext(onTestShard(rotating)))).toBeGreaterThan(0);

    // Once moved, shard 2 re-seals them; once confirmed, shard 1 holds none.
    await moved(moving.internalKey, moving.group, 2);
    await resealAll(2);
    const onShard2 = await storedTokens(moving.sellerId, 2);
    expect(await open(onShard2?.access as string, onlyNewKey)).toBe(await open(fenced?.access as string, env));
    await switchedLongAgo(moving.group);
    await confirmed(moving.internalKey, moving.group);
    expect(await tokensToReseal(jobContext(onTestShard(rotating, 1)))).toBe(0);
    expect(await tokensToReseal(jobContext(onTestShard(rotating, 2)))).toBe(0);
  });
});
