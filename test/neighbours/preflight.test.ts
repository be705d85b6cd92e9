import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLIENT_CACHE_MS } from "../../src/services/accounts/apiClients";
import { call, newClient } from "../harness/api";
import { createAd } from "../harness/data";
import { connectedSeller, publicationTime } from "../harness/marketplace";
import { expectWithinNeighbourBound, sleep } from "./bound";

/**
 * Dry runs at the rate limit: client A, within the limits every deployment gives a client (3 requests a
 * second, a burst of 10), asks for dry runs of 100 ads back to back, retrying each 429 after its
 * Retry-After as the typed client does. Each would make 100 marketplace reviews; priced by its work, A
 * pays for them in tokens, and B's publication on the same marketplace keeps its pace.
 */

const DEPLOYED = { rate: 3, burst: 10 };
const ADS = 100;

describe("the dry run", () => {
  it("B's portal_a publication keeps its pace beside A's dry runs of 100 ads at A's rate limit", async () => {
    const a = await newClient({ internal: true });
    const b = await newClient({ internal: true });
    const sellerA = await connectedSeller(a.key, a.key);
    const adIds: number[] = [];
    for (let i = 0; i < ADS; i += 1) adIds.push((await createAd(a.key, sellerA, { externalAdId: 5000 + i })).adId);
    const sellerB = await connectedSeller(b.key, b.key);
    // A runs from now on with a deployment's limits (the isolate's memory of its row lapses first).
    await env.DIRECTORY.prepare("UPDATE api_clients SET rate = ?, burst = ? WHERE id = ?")
      .bind(DEPLOYED.rate, DEPLOYED.burst, a.client.id)
      .run();
    await sleep(CLIENT_CACHE_MS + 500);

    const alone = await publicationTime(b.key, sellerB, "portal_a");
    let running = true;
    let dryRuns = 0;
    const until = Date.now() + 60_000;
    const load = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (running && Date.now() < until) {
          const answer = await call("POST", "/publish/preflight/", {
            key: a.key,
            body: { userId: sellerA, adId: adIds, portal: "portal_a" },
          });
          if (answer.status === 200) dryRuns += 1;
          else await sleep(Math.min(2_000, Number(answer.headers.get("Retry-After") ?? 1) * 1000));
        }
      }),
    );
    await sleep(3_000); // A's dry runs are under way
    const beside = await publicationTime(b.key, sellerB, "portal_a");
    running = false;
    await load;
    expect(dryRuns).toBeGreaterThan(0);
    console.log(`A's dry runs of ${ADS} ads answered: ${dryRuns}`);
    expectWithinNeighbourBound("B's portal_a publication", alone, beside);
  }, 300_000);
});
