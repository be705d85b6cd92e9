import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DELIVERY_LIMITS } from "../../src/services/events";
import { IMAGE_LIMITS } from "../../src/services/images";
import { eventsOf, payloadOf, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { activate, createAd, createUser } from "../harness/data";
import { publicationTime } from "../harness/marketplace";
import { expectWithinNeighbourBound, sleep, timed } from "./bound";

/**
 * The queues' lanes. The local runtime hands a queue one batch at a time (production runs several side
 * by side, docs/operating.md), so here a batch that one client holds up holds up everything behind it:
 * the strictest case of what production sees.
 */

/** B's operation: a test message of B's endpoint, until it reaches B's receiver. */
async function webhookTime(key: string, webhookId: number, receiverName: string) {
  const before = (await receivedBy(receiverName)).length;
  return timed(async () => {
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key }), 200);
    await eventually(
      async () => ((await receivedBy(receiverName)).length > before ? true : undefined),
      "B's webhook",
      600,
    );
  });
}

describe("the webhook lane", () => {
  it("an endpoint that answers 200, slowly, under a replay holds up only itself: it moves to the slow lane", async () => {
    const [a, b] = await Promise.all([newClient(), newClient()]);
    const quick = receiver("ok");
    const bEndpoint = (await registerWebhook(b.key, quick.url)).webhookId;
    const alone = await webhookTime(b.key, bEndpoint, quick.name);

    const slow = receiver("slow");
    const { webhookId } = await registerWebhook(a.key, slow.url);
    await eventsOf(a.client.id, 24);
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/replay`, { key: a.key, body: { after: 0 } }), 200);
    await eventually(async () => ((await receivedBy(slow.name)).length > 0 ? true : undefined), "A's first delivery");
    const beside = await webhookTime(b.key, bEndpoint, quick.name);
    expectWithinNeighbourBound("B's webhook", alone, beside);

    // A's endpoint is on the slow lane, and every one of its events still arrives (at its own pace).
    const endpoint = await env.DB.prepare("SELECT slow_until FROM webhook_endpoints WHERE id = ?")
      .bind(webhookId)
      .first<{ slow_until: string | null }>();
    expect(endpoint?.slow_until).not.toBeNull();
    const delivered = await eventually(
      async () => {
        const ids = new Set((await receivedBy(slow.name)).map((r) => r.headers["webhook-id"]));
        return ids.size >= 24 ? ids : undefined;
      },
      "A's 24 events",
      1_200,
    );
    expect(delivered.size).toBe(24);
    expect((await receivedBy(slow.name)).every((r) => payloadOf(r).type === "publish.active")).toBe(true);
    expect(DELIVERY_LIMITS.fastLaneMs).toBeLessThan(DELIVERY_LIMITS.timeoutMs);
    expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key: a.key }), 200);
  }, 180_000);
});

describe("the image lane", () => {
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
    const failed = await eventually(
      async () => {
        const status = await call("GET", `/imagestatus/${owner}`, { key: a.key });
        const done = (status.body.data as { done: boolean; result: boolean; reason: string }[]).filter((j) => j.done);
        return done.length > 0 ? done : undefined;
      },
      "A's first downloads to end",
      600,
    );
    expect(failed.map((job) => [job.result, job.reason])).toEqual(
      failed.map(() => [false, `not downloaded within ${IMAGE_LIMITS.downloadMs / 1000} s`]),
    );
    for (const ad of ads) expectEnvelope(await call("DELETE", `/ads/${ad.adId}`, { key: a.key }), 200);
  }, 180_000);
});
