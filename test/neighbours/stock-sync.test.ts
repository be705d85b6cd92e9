import { describe, expect, it } from "vitest";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { activate, createUser, PAID_CATEGORY } from "../harness/data";
import { publicationTime } from "../harness/marketplace";
import { expectWithinNeighbourBound } from "./bound";

/**
 * A dealer's 10,000-item stock synced by client A (streamed, taken whole in one call, applied in A's own
 * lanes, each item placed on the website) beside client B's publication: B waits for its own turn, not
 * behind A's stock.
 */
const ITEMS = 10_000;

describe("a 10,000-item stock sync", () => {
  it("delays another client's publication by at most its bound", async () => {
    const b = await newClient({ partner: true });
    const bSeller = await createUser(b.key);
    await activate(b.key, bSeller);
    await publicationTime(b.key, bSeller.userId); // warms the pipeline up
    const alone = await publicationTime(b.key, bSeller.userId);

    const a = await newClient({ partner: true });
    const aSeller = await createUser(a.key);
    await activate(a.key, aSeller);
    const encoder = new TextEncoder();
    let sent = 0;
    const stock = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === ITEMS) return controller.close();
        const lines = Array.from({ length: 500 }, (_, i) => {
          const externalAdId = sent + i + 1;
          return `${JSON.stringify({
            externalAdId,
            categoryId: PAID_CATEGORY,
            title: `Brommer ${externalAdId}`,
            description: "Een nette brommer uit de voorraad.",
            price: { model: "fixed", price: 100_000 + externalAdId },
            targets: ["website"],
          })}\n`;
        });
        sent += 500;
        controller.enqueue(encoder.encode(lines.join("")));
      },
    });
    const postedAt = Date.now();
    const started = await call("POST", `/syncs/?userId=${aSeller.userId}`, {
      key: a.key,
      rawBody: stock,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectEnvelope(started, 200);
    console.log(`A's stock of ${ITEMS} items taken in ${Date.now() - postedAt} ms`);
    const syncId = started.body.data.syncId as number;
    const progress = async () => (await call("GET", `/syncs/${syncId}`, { key: a.key })).body.data;
    // B publishes once A's steps are under way.
    await eventually(async () => ((await progress()).applied > 0 ? true : undefined), "A's first step");
    const beside = await publicationTime(b.key, bSeller.userId);
    const during = await progress();
    expectWithinNeighbourBound(`B's publication beside a ${ITEMS}-item sync`, alone, beside);
    // A's whole stock was taken in the call, and its sync was still at work when B's publication was live.
    expect(started.body.data.items).toBe(ITEMS);
    expect(during.state).toBe("running");
    // The sync's end is the benchmark's (npm run bench -- --sync: 10,000 items created, then all unchanged);
    // its last steps would hold this suite's core for a minute and more, with no B beside them.
  }, 1_800_000);
});
