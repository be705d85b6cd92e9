import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, expectError, newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";

/**
 * Requests are priced by their work: a dry run costs a token per verdict and a batch a token per ad, the
 * first on arrival and the rest once done, and the bucket may go below empty for the calls after it.
 */

const RATE = 1;
const BURST = 50;

/** The tokens left that an answer's RateLimit header names. */
const remainingOf = (answer: { headers: Headers }) =>
  Number(/;r=(\d+);/.exec(answer.headers.get("RateLimit") ?? "")?.[1] ?? Number.NaN);

describe("the rate limit prices a request by its work", () => {
  it("a dry run of n ads and a batch of n ads cost n tokens each, one call costs one", async () => {
    const { key } = await newClient({ internal: true, rate: RATE, burst: BURST });
    const { userId } = await createUser(key);
    const adIds: number[] = [];
    for (let i = 0; i < 12; i += 1) adIds.push((await createAd(key, userId, { externalAdId: 800 + i })).adId);

    const started = Date.now();
    const before = await call("GET", "/client/", { key });
    expect(before.headers.get("RateLimit-Cost")).toBe("1");
    const dryRun = await call("POST", "/publish/preflight/", { key, body: { userId, adId: adIds, portal: "website" } });
    expect(dryRun.status).toBe(200);
    expect(dryRun.body.data.verdicts).toHaveLength(12);
    expect(dryRun.headers.get("RateLimit-Cost")).toBe("12");
    const batch = await call("POST", "/publish/batch", { key, body: { userId, adId: adIds, portal: "website" } });
    expect(batch.status).toBe(200);
    expect(batch.headers.get("RateLimit-Cost")).toBe("12");
    // What the refill could have given back meanwhile, from the time measured.
    const refilled = Math.ceil(((Date.now() - started) / 1000) * RATE) + 1;
    expect(remainingOf(batch)).toBeLessThanOrEqual(remainingOf(before) - 24 + refilled);
  });

  it("work past the bucket is a debt: the calls after it wait (429 with Retry-After) until it is paid back", async () => {
    const { key, client } = await newClient({ internal: true, rate: RATE, burst: BURST });
    const limiter = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(`client:${client.id}`));
    // As a dry run of 100 ads on three targets leaves it: 300 tokens owed on a bucket of 50.
    await limiter.owe(RATE, BURST, 300);
    const refused = await call("GET", "/client/", { key });
    expectError(refused, "rate_limited");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(200);
    expect(remainingOf(refused)).toBe(0);
  });
});
