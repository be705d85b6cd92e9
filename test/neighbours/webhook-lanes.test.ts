import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LANE_SHARES } from "../../src/jobs/lanes";
import { DELIVERY_LIMITS, ENDPOINTS_PER_CLIENT } from "../../src/services/events";
import { clientLanesOf } from "../../src/services/shared";
import { eventsOf, payloadOf, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { expectWithinNeighbourBound, timed } from "./bound";

/**
 * The webhook lanes. The local runtime hands a queue one batch at a time (production runs several side
 * by side, docs/operating.md), so here a batch that one client held up would hold up everything behind
 * it: the strictest case of what production sees. The consumer hands each job to its client's lanes
 * (src/jobs/clientLanes.ts) instead, where it runs within that client's share.
 */

/** B's operation: a test message of B's endpoint, until it reaches B's receiver. */
async function webhookTime(key: string, webhookId: number, receiverName: string) {
  const before = (await receivedBy(receiverName)).length;
  return timed(async () => {
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key }), 200);
    await eventually(async () => ((await receivedBy(receiverName)).length > before ? true : undefined), "B's webhook");
  });
}

/** A's events to its slow endpoint: more than a batch of the slow lane's queue (10) holds. */
const SLOW_EVENTS = 12;

describe("the webhook lane", () => {
  it("an endpoint that answers 200, slowly, under a replay holds up only itself: it moves to the slow lane", async () => {
    const [a, b] = await Promise.all([newClient(), newClient()]);
    const quick = receiver("ok");
    const bEndpoint = (await registerWebhook(b.key, quick.url)).webhookId;
    const alone = await webhookTime(b.key, bEndpoint, quick.name);

    const slow = receiver("slow");
    const { webhookId } = await registerWebhook(a.key, slow.url);
    await eventsOf(a.client.id, SLOW_EVENTS);
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/replay`, { key: a.key, body: { after: 0 } }), 200);
    await eventually(async () => ((await receivedBy(slow.name)).length > 0 ? true : undefined), "A's first delivery");
    const beside = await webhookTime(b.key, bEndpoint, quick.name);
    expectWithinNeighbourBound("B's webhook", alone, beside);

    // A's endpoint is on the slow lane, and every one of its events still arrives (at its own pace).
    await eventually(async () => {
      const endpoint = await env.DB.prepare("SELECT slow_until FROM webhook_endpoints WHERE id = ?")
        .bind(webhookId)
        .first<{ slow_until: string | null }>();
      return endpoint?.slow_until ?? undefined;
    }, "A's endpoint on the slow lane");
    const delivered = await eventually(async () => {
      const ids = new Set((await receivedBy(slow.name)).map((r) => r.headers["webhook-id"]));
      return ids.size >= SLOW_EVENTS ? ids : undefined;
    }, `A's ${SLOW_EVENTS} events`);
    expect(delivered.size).toBe(SLOW_EVENTS);
    expect((await receivedBy(slow.name)).every((r) => payloadOf(r).type === "publish.active")).toBe(true);
    expect(DELIVERY_LIMITS.fastLaneMs).toBeLessThan(DELIVERY_LIMITS.timeoutMs);
    expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key: a.key }), 200);
  }, 180_000);
});

/** A's endpoints, every one a client may have, each answering per `behaviour`, each handed A's 24 events. */
async function floodOfEndpoints(a: { key: string; client: { id: number } }, behaviour: string) {
  const endpoints: { webhookId: number; name: string }[] = [];
  for (let i = 0; i < ENDPOINTS_PER_CLIENT; i += 1) {
    const hook = receiver(behaviour);
    endpoints.push({ webhookId: (await registerWebhook(a.key, hook.url)).webhookId, name: hook.name });
  }
  await eventsOf(a.client.id, 24);
  for (const { webhookId } of endpoints)
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/replay`, { key: a.key, body: { after: 0 } }), 200);
  await eventually(
    async () => ((await receivedBy((endpoints[0] as { name: string }).name)).length > 0 ? true : undefined),
    "A's first delivery",
  );
  return endpoints;
}

describe("many endpoints, each just under a lane's mark", () => {
  it("16 endpoints answering in 1.8 s (under the fast lane's 2 s) hold up only their own client", async () => {
    const [a, b] = await Promise.all([newClient(), newClient()]);
    const quick = receiver("ok");
    const bEndpoint = (await registerWebhook(b.key, quick.url)).webhookId;
    const alone = await webhookTime(b.key, bEndpoint, quick.name);

    const endpoints = await floodOfEndpoints(a, "after1800");
    const beside = await webhookTime(b.key, bEndpoint, quick.name);
    expectWithinNeighbourBound("B's webhook beside 16 endpoints just under the fast lane's mark", alone, beside);

    // A's deliveries go on at A's share: never more of them at once than its slots of the lane.
    const lanes = clientLanesOf(env, a.client.id);
    expect((await lanes.waiting()).webhooks).toBeGreaterThan(LANE_SHARES.webhooks.slots);
    for (const { webhookId } of endpoints)
      expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key: a.key }), 200);
  }, 300_000);

  it("16 endpoints answering in 9 s (under the slow lane's 10 s) hold up only their own client", async () => {
    const [a, b] = await Promise.all([newClient(), newClient()]);
    const unhurried = receiver("after2500");
    const bEndpoint = (await registerWebhook(b.key, unhurried.url)).webhookId;
    // B's first message moves its endpoint to the slow lane; the second is B's time there, alone.
    await webhookTime(b.key, bEndpoint, unhurried.name);
    const alone = await webhookTime(b.key, bEndpoint, unhurried.name);

    const endpoints = await floodOfEndpoints(a, "after9000");
    const beside = await webhookTime(b.key, bEndpoint, unhurried.name);
    expectWithinNeighbourBound(
      "B's slow-lane webhook beside 16 endpoints just under the slow lane's mark",
      alone,
      beside,
    );
    for (const { webhookId } of endpoints)
      expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key: a.key }), 200);
  }, 300_000);
});
