import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLIENT_CACHE_MS } from "../../src/services/accounts/apiClients";
import { call, newClient } from "../harness/api";
import { expectWithinNeighbourBound, sleep, timed } from "./bound";

/**
 * The limiter of requests that are not yet tied to a client: a dealer group behind one address, one of
 * whose systems sends bad keys in a tight loop (eight at a time, back to back).
 */

const ADDRESS = "198.51.100.40";
/** The per-address limits every deployment runs with (wrangler.toml), not the test pool's raised ones. */
const limited = { ...env, RATE_LIMIT_IP_RPS: "10", RATE_LIMIT_IP_BURST: "50" };
const fromAddress = (key: string) =>
  call("GET", "/users/", { key, env: limited, headers: { "CF-Connecting-IP": ADDRESS } });

/** B's operation: a read, retried after each 429's Retry-After as the typed client does. */
async function bRead(key: string) {
  for (;;) {
    const answer = await fromAddress(key);
    if (answer.status === 200) return;
    expect(answer.status).toBe(429);
    await sleep(Number(answer.headers.get("Retry-After") ?? 1) * 1000);
  }
}

describe("the authentication limiter", () => {
  it("a bad-key flood from B's own address leaves B's valid key working", async () => {
    const b = await newClient();
    const alone = await timed(() => bRead(b.key));
    await sleep(CLIENT_CACHE_MS + 500); // this isolate no longer holds B's key: every request goes to the limiter

    let flooding = true;
    const refused: number[] = [];
    const until = Date.now() + 30_000;
    // The flood's requests chain on promises, so a timer would wait for the flood to end: B starts at the
    // first 429 instead, when the flood has emptied the address's bucket.
    let bucketEmptied = () => {};
    const emptied = new Promise<void>((resolve) => {
      bucketEmptied = resolve;
    });
    const flood = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (flooding && Date.now() < until) {
          const { status } = await fromAddress(`bad-${crypto.randomUUID()}`);
          refused.push(status);
          if (status === 429) bucketEmptied();
        }
      }),
    );
    await emptied;
    const beside = await timed(() => bRead(b.key));
    const floodedDuringRead = flooding && Date.now() < until;
    flooding = false;
    await flood;
    // B's read ran while the flood did.
    expect(floodedDuringRead).toBe(true);
    expect(refused.filter((status) => status === 429).length).toBeGreaterThan(0);
    expectWithinNeighbourBound("B's read", alone, beside);
  }, 120_000);
});
