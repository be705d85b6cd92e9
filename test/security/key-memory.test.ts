import { env, runInDurableObject } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { apiClients } from "../../src/db/schema";
import { GOOD_KEY_PREFIX, GOOD_KEY_TTL_MS, GOOD_KEYS_PER_ADDRESS } from "../../src/durable/RateLimiter";
import { keyFingerprint } from "../../src/lib/crypto";
import { CLIENT_CACHE_MS } from "../../src/services/accounts/apiClients";
import { call, newClient } from "../harness/api";

/**
 * An address remembers the keys that authenticated from it (each then has a bucket of its own there),
 * but not for ever: a revoked key is forgotten at its next request, a key unseen for an hour is
 * forgotten, and an address holds at most GOOD_KEYS_PER_ADDRESS of them.
 */

/** The per-address limits every deployment runs with (wrangler.toml), not the test pool's raised ones. */
const limited = { ...env, RATE_LIMIT_IP_RPS: "1", RATE_LIMIT_IP_BURST: "20" };
const limiterOf = (address: string) => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`ip:${address}`));
const fromAddress = (address: string, key: string) =>
  call("GET", "/client/", { key, env: limited, headers: { "CF-Connecting-IP": address } });

/** The fingerprints the address's limiter remembers, with when each was last seen. */
const remembered = (address: string) =>
  runInDurableObject(limiterOf(address), async (_instance, state) =>
    Object.fromEntries(state.storage.kv.list<number>({ prefix: GOOD_KEY_PREFIX })),
  );

describe("the keys an address remembers", () => {
  it("forgets a revoked key at once: its requests then drain the address's bucket, not a bucket of their own", async () => {
    const address = "198.51.100.71";
    const { key, client } = await newClient();
    expect((await fromAddress(address, key)).status).toBe(200);
    const fingerprint = await keyFingerprint(key);
    expect(Object.keys(await remembered(address))).toEqual([`${GOOD_KEY_PREFIX}${fingerprint}`]);

    await getDb(env.DIRECTORY).update(apiClients).set({ revoked: true }).where(eq(apiClients.id, client.id));
    await new Promise((resolve) => setTimeout(resolve, CLIENT_CACHE_MS + 500)); // the isolate's memory of it lapses
    expect((await fromAddress(address, key)).status).toBe(401);
    expect(await remembered(address)).toEqual({});
    // The revoked key's requests now take from the address's bucket (20): a stranger's key is refused too.
    const statuses: number[] = [];
    for (let i = 0; i < 25; i += 1) statuses.push((await fromAddress(address, key)).status);
    expect(statuses).toContain(429);
    expect((await fromAddress(address, `unknown-${crypto.randomUUID()}`)).status).toBe(429);
  }, 60_000);

  it("forgets a key not seen for an hour, and holds at most GOOD_KEYS_PER_ADDRESS, the least recently seen going first", async () => {
    const address = "198.51.100.72";
    const limiter = limiterOf(address);
    await limiter.rememberGoodKey("stale");
    await runInDurableObject(limiter, async (_instance, state) => {
      state.storage.kv.put(`${GOOD_KEY_PREFIX}stale`, Date.now() - GOOD_KEY_TTL_MS - 1);
    });
    // A token for the stale key comes from the address's bucket (refilling too slowly to matter here), and
    // the memory is dropped.
    const slow = 0.0001;
    const before = await limiter.take(slow, 20);
    await limiter.takeForKey("stale", slow, 20);
    expect((await limiter.take(slow, 20)).remaining).toBe(before.remaining - 2);
    expect(await remembered(address)).toEqual({});

    for (let i = 0; i < GOOD_KEYS_PER_ADDRESS + 5; i += 1) await limiter.rememberGoodKey(`key-${i}`);
    const kept = Object.keys(await remembered(address));
    expect(kept).toHaveLength(GOOD_KEYS_PER_ADDRESS);
    expect(kept).not.toContain(`${GOOD_KEY_PREFIX}key-0`);
    expect(kept).toContain(`${GOOD_KEY_PREFIX}key-${GOOD_KEYS_PER_ADDRESS + 4}`);
  });
});
