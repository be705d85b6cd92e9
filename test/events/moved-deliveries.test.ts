import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { deliverWebhooks } from "../../src/services/events";
import { jobContext } from "../../src/services/shared";
import type { MessageRouting, WebhookMessage } from "../../src/services/shared/jobMessages";
import { receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { eventually, newClient } from "../harness/api";
import { onTestShard } from "../harness/d1";

/**
 * A delivery sent before its group moved names the event by its id on the shard it was sent from, which
 * may be several moves back: the event is found by any of its earlier ids (src/db/moves/cursors.ts), and
 * keeps the webhook-id of its first.
 */
describe("a delivery sent before its group's moves", () => {
  it("finds its event by its id of any era before, and keeps the first webhook-id", async () => {
    const { key, client } = await newClient({ partner: true });
    const hook = receiver("ok");
    const { webhookId } = await registerWebhook(key, hook.url);
    // An event that lived through two moves: its id in era 0 and in era 1, and now a third.
    const [era0, era1] = [70_001, 80_001];
    const row = await env.DB.prepare(
      `INSERT INTO events (client_id, type, data, origin_id, origins)
       VALUES (?1, 'publish.active', '{"queueItemId":0,"kind":"placement","remoteAdId":null,"startDate":null,"closeDate":null}', ?2, ?3)
       RETURNING id`,
    )
      .bind(client.id, era1, JSON.stringify([era0, era1]))
      .first<{ id: number }>();
    const sent: WebhookMessage[] = [];
    const capture = { send: async (m: WebhookMessage) => void sent.push(m), sendBatch: async () => {} };
    const bindings = onTestShard({ ...env, WEBHOOKS: capture, WEBHOOKS_SLOW: capture } as unknown as Env);
    const message: WebhookMessage & MessageRouting = {
      kind: "webhook",
      endpointId: webhookId,
      eventId: era0,
      attempt: 1,
      movedFrom: 2,
    };
    const [settled] = await deliverWebhooks(jobContext(bindings), { messages: [message], lane: "fast" });
    expect(settled?.status).toBe("fulfilled");
    const [delivered] = await eventually(async () => {
      const received = await receivedBy(hook.name);
      return received.length > 0 ? received : undefined;
    }, "the delivery");
    expect(delivered?.headers["webhook-id"]).toBe(`evt_${era0}`);
    expect(JSON.parse(delivered?.body ?? "{}").data.eventId).toBe(row?.id);
  });
});
