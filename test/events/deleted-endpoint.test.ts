import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { deliverWebhooks } from "../../src/services/events";
import { jobContext } from "../../src/services/shared";
import type { WebhookMessage } from "../../src/services/shared/jobMessages";
import { eventsOf, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { onTestShard } from "../harness/d1";

/** A delivery whose endpoint is deleted while its request runs ends there, moot: it is not tried again. */
describe("a webhook endpoint deleted while its delivery runs", () => {
  it("ends the delivery as moot: no failure, no retry, no log left", async () => {
    const { key, client } = await newClient({ partner: true });
    // The receiver holds the request past the slow lane's timeout: a failure, which would be tried again.
    const slowFailure = receiver("hang");
    const { webhookId } = await registerWebhook(key, slowFailure.url);
    const [eventId] = await eventsOf(client.id, 1);
    const sent: WebhookMessage[] = [];
    const capture = {
      send: async (message: WebhookMessage) => void sent.push(message),
      sendBatch: async (messages: { body: WebhookMessage }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    const bindings = onTestShard({ ...env, WEBHOOKS: capture, WEBHOOKS_SLOW: capture } as unknown as Env);
    const message: WebhookMessage = { kind: "webhook", endpointId: webhookId, eventId, attempt: 1, counted: false };
    const delivering = deliverWebhooks(jobContext(bindings), { messages: [message], lane: "slow" });
    await eventually(async () => ((await receivedBy(slowFailure.name)).length > 0 ? true : undefined), "the request");
    expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key }), 200);
    const [settled] = await delivering;
    expect(settled?.status, JSON.stringify(settled)).toBe("fulfilled");
    expect(sent, "not sent again").toEqual([]);
    const logged = await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?")
      .bind(webhookId)
      .first<{ n: number }>();
    expect(logged?.n).toBe(0);
  }, 60_000);
});
