import { describe, expect, it } from "vitest";
import { IMAGE_LIMITS } from "../../src/services/images";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { activate, createAd, createUser } from "../harness/data";
import { publicationTime } from "../harness/marketplace";
import { expectWithinNeighbourBound, sleep, timed } from "./bound";

/**
 * The image lane. The local runtime hands a queue one batch at a time (production runs several side by
 * side, docs/operating.md), so a batch that one client's slow downloads held up would hold up everything
 * behind it; the consumer hands each job to its client's lanes (src/jobs/clientLanes.ts) instead.
 */

/** B's operation: one image from a host that answers at once, until its job is done. */
async function imageTime(key: string, userId: number, adId: number) {
  return timed(async () => {
    expectEnvelope(
      await call("PUT", `/images/${adId}`, {
        key,
        body: { images: [{ image: { url: "http://images.test/red.png" } }] },
      }),
      200,
    );
    await eventually(async () => {
      const status = await call("GET", `/imagestatus/${userId}/${adId}`, { key });
      const jobs = status.body.data as { done: boolean; result: boolean }[];
      return jobs.length > 0 && jobs.every((job) => job.done && job.result) ? true : undefined;
    }, "B's image");
  });
}

describe("the image lane", () => {
  it("48 images from a trickling host, over two users, hold up only their own client's images", async () => {
    const [a, b] = await Promise.all([newClient({ partner: true }), newClient({ partner: true })]);
    const bSeller = (await createUser(b.key)).userId;
    // The first image of a run warms the image pipeline up; B's time alone is its second.
    await imageTime(b.key, bSeller, (await createAd(b.key, bSeller)).adId);
    const alone = await imageTime(b.key, bSeller, (await createAd(b.key, bSeller)).adId);

    const trickling = { image: { url: "http://images.test/trickle.png" } };
    const aAds: number[] = [];
    for (const owner of [(await createUser(a.key)).userId, (await createUser(a.key)).userId])
      for (let i = 0; i < 4; i += 1) {
        const { adId } = await createAd(a.key, owner);
        aAds.push(adId);
        expectEnvelope(
          await call("PUT", `/images/${adId}`, { key: a.key, body: { images: Array(6).fill(trickling) } }),
          200,
        );
      }
    await sleep(1_500); // A's downloads are under way
    const beside = await imageTime(b.key, bSeller, (await createAd(b.key, bSeller)).adId);
    expectWithinNeighbourBound("B's image beside 48 trickling ones", alone, beside);
    for (const adId of aAds) expectEnvelope(await call("DELETE", `/ads/${adId}`, { key: a.key }), 200);
  }, 300_000);

  it("image hosts that trickle their bytes hold up no publishing, and each download ends at its deadline", async () => {
    const [a, b] = await Promise.all([newClient({ partner: true }), newClient({ partner: true })]);
    const seller = await createUser(b.key);
    await activate(b.key, seller);
    const alone = await publicationTime(b.key, seller.userId);

    // 18 images from a host that trickles: in the queue ahead of B's publication, more than a batch holds.
    const owner = (await createUser(a.key)).userId;
    const ads = await Promise.all([1, 2, 3].map(() => createAd(a.key, owner)));
    const trickling = { image: { url: "http://images.test/trickle.png" } };
    for (const ad of ads)
      expectEnvelope(
        await call("PUT", `/images/${ad.adId}`, { key: a.key, body: { images: Array(6).fill(trickling) } }),
        200,
      );
    await sleep(1_500); // A's downloads are under way
    const beside = await publicationTime(b.key, seller.userId);
    expectWithinNeighbourBound("B's website publication", alone, beside);

    // A's downloads end at their deadline, not when the host is done.
    const failed = await eventually(async () => {
      const status = await call("GET", `/imagestatus/${owner}`, { key: a.key });
      const done = (status.body.data as { done: boolean; result: boolean; reason: string }[]).filter((j) => j.done);
      return done.length > 0 ? done : undefined;
    }, "A's first downloads to end");
    expect(failed.map((job) => [job.result, job.reason])).toEqual(
      failed.map(() => [false, `not downloaded within ${IMAGE_LIMITS.downloadMs / 1000} s`]),
    );
    for (const ad of ads) expectEnvelope(await call("DELETE", `/ads/${ad.adId}`, { key: a.key }), 200);
  }, 180_000);
});
