import { createExecutionContext, env } from "cloudflare:test";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import type { Env } from "../../src/env";
import { EVENT_TYPES } from "../../src/services/events";
import { payloadOf, type Received, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { BASE, call, eventually, expectEnvelope, newClient, twoClients } from "../harness/api";
import { createAd } from "../harness/data";
import { connectedSeller, MIXED_ADS, MIXED_REFUSED, publishMixedAds } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const register = (url: string, body: Record<string, unknown> = {}, apiKey = key) => registerWebhook(apiKey, url, body);

describe("webhook endpoints", () => {
  it("show the secret once, refuse private and plain-http URLs outside development, and belong to their client", async () => {
    const { name, url } = receiver("ok");
    const created = await register(url, { types: ["publish.active"], description: "ERP" });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const shown = await call("GET", `/webhooks/${created.webhookId}`, { key });
    expect(shown.body.data).toMatchObject({ url, types: ["publish.active"], enabled: true, description: "ERP" });
    expect(shown.body.data).not.toHaveProperty("secret");
    expect(
      (await call("GET", "/webhooks/", { key })).body.data.map((w: { webhookId: number }) => w.webhookId),
    ).toContain(created.webhookId);

    const other = await newClient({ partner: true });
    for (const [method, path] of [
      ["GET", `/webhooks/${created.webhookId}`],
      ["PUT", `/webhooks/${created.webhookId}`],
      ["DELETE", `/webhooks/${created.webhookId}`],
      ["POST", `/webhooks/${created.webhookId}/rotate`],
      ["POST", `/webhooks/${created.webhookId}/test`],
      ["GET", `/webhooks/${created.webhookId}/deliveries`],
    ] as const)
      expectEnvelope(
        await call(method, path, { key: other.key, body: method === "PUT" ? { enabled: false } : undefined }),
        404,
      );
    expect((await call("GET", "/webhooks/", { key: other.key })).body.data).toEqual([]);
    expect(await receivedBy(name)).toEqual([]);

    const sandbox = { ...env, ENVIRONMENT: "sandbox", OUTBOUND_DNS_RESOLVER: "http://dns.test/dns-query" } as Env;
    for (const target of [
      "https://127.0.0.1/hook",
      "https://localhost./hook",
      "https://10.0.0.8/hook",
      "https://[::1]/hook",
      "https://rebind.test/hook",
      "http://images.test/hook",
    ]) {
      const answer = await app.fetch(
        new Request(`${BASE}/webhooks/`, {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify({ url: target }),
        }),
        sandbox,
        createExecutionContext(),
      );
      expect(answer.status, target).toBe(400);
      expect((await answer.json<{ errors: string[] }>()).errors[0], target).toMatch(/^url: /);
    }
  });

  it(`delivers exactly one signed terminal event per ad across ${MIXED_ADS} placements with refusals and retries`, async () => {
    const { name, url } = receiver("ok");
    const { secret } = await register(url);
    // Another client's endpoint, which must receive none of this client's events.
    const other = await newClient({ partner: true });
    const theirs = receiver("ok");
    await register(theirs.url, {}, other.key);
    const { adIds } = await publishMixedAds(key, internalKey);
    const terminal = (all: Received[]) =>
      all.filter((r) => ["publish.active", "publish.error"].includes(payloadOf(r).type));
    // At least once (docs/events-and-webhooks.md): a delivery answered after the fast lane's 2 s, which a
    // busy machine makes happen, is sent again with the same webhook-id; a receiver keeps one per id.
    const oncePerId = (all: Received[]) => [...new Map(all.map((r) => [r.headers["webhook-id"], r])).values()];
    const delivered = await eventually(async () => {
      const all = await receivedBy(name);
      return terminal(oncePerId(all)).length >= MIXED_ADS ? all : undefined;
    }, "every ad's terminal event at the receiver");
    const verifier = new Webhook(secret);
    for (const r of delivered) expect(() => verifier.verify(r.body, r.headers)).not.toThrow();
    // A message sent again is the same message.
    const first = new Map(oncePerId([...delivered].reverse()).map((r) => [r.headers["webhook-id"], r.body]));
    for (const r of delivered) expect(r.body, r.headers["webhook-id"]).toBe(first.get(r.headers["webhook-id"]));
    const received = oncePerId(delivered);
    const perAd = new Map<number, string[]>();
    for (const r of terminal(received)) {
      const { data, type } = payloadOf(r);
      perAd.set(data.adId, [...(perAd.get(data.adId) ?? []), type]);
    }
    expect(perAd.size).toBe(MIXED_ADS);
    for (const adId of adIds) expect(perAd.get(adId), `ad ${adId}`).toHaveLength(1);
    expect([...perAd.values()].flat().filter((t) => t === "publish.error")).toHaveLength(MIXED_REFUSED);
    // One message per event (an ad's one terminal event above came under one webhook-id): the event's id.
    expect(received[0]?.headers["webhook-id"]).toMatch(/^evt_\d+$/);
    expect(await receivedBy(theirs.name)).toEqual([]);
  }, 180_000);

  it("retries a failing receiver until it answers 200, and logs every attempt", async () => {
    const { name, url } = receiver("flaky");
    const { webhookId } = await register(url, { types: ["publish.active"] });
    const userId = await connectedSeller(key, internalKey);
    const ad = await createAd(key, userId);
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "website" } });
    const received = await eventually(async () => {
      const all = await receivedBy(name);
      return all.some((r) => r.status === 200) ? all : undefined;
    }, "the fourth attempt");
    expect(received.map((r) => r.status)).toEqual([500, 500, 500, 200]);
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    const log = await call("GET", `/webhooks/${webhookId}/deliveries/`, { key });
    expectEnvelope(log, 200);
    expect(log.body.data.map((d) => [d.attempt, d.statusCode])).toEqual([
      [4, 200],
      [3, 500],
      [2, 500],
      [1, 500],
    ]);
    expect(log.body.data[1]).toMatchObject({ succeeded: false, error: "HTTP 500", nextAttempt: expect.any(String) });
    expect(log.body.data[0]).toMatchObject({ succeeded: true, error: null, nextAttempt: null });

    // Redelivery and replay send the message again.
    expectEnvelope(
      await call("POST", `/webhooks/${webhookId}/deliveries/${log.body.data[0]?.deliveryId}/redeliver`, { key }),
      200,
    );
    await eventually(async () => ((await receivedBy(name)).length === 5 ? true : undefined), "the redelivery");
    const replay = await call("POST", `/webhooks/${webhookId}/replay`, { key, body: { after: 0 } });
    expectEnvelope(replay, 200);
    expect(replay.body.data.queued).toBeGreaterThanOrEqual(1);
    await eventually(async () => ((await receivedBy(name)).length >= 6 ? true : undefined), "the replay");
  });

  it("signatures fail for a tampered body or an old timestamp, and rotation signs with both secrets", async () => {
    const { name, url } = receiver("ok");
    const { webhookId, secret } = await register(url);
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key }), 200);
    const [test] = await eventually(async () => {
      const all = await receivedBy(name);
      return all.length > 0 ? all : undefined;
    }, "the test message");
    if (!test) throw new Error("no test message");
    expect(payloadOf(test)).toMatchObject({ type: "webhook.test", data: { webhookId } });
    const verifier = new Webhook(secret);
    expect(() => verifier.verify(test.body, test.headers)).not.toThrow();
    expect(() => verifier.verify(test.body.replace("webhook.test", "webhook.evil"), test.headers)).toThrow();
    const old = new Date(Date.now() - 10 * 60_000);
    const oldHeaders = {
      "webhook-id": test.headers["webhook-id"] as string,
      "webhook-timestamp": String(Math.floor(old.getTime() / 1000)),
      "webhook-signature": verifier.sign(test.headers["webhook-id"] as string, old, test.body),
    };
    expect(() => verifier.verify(test.body, oldHeaders)).toThrow();

    const rotated = await call("POST", `/webhooks/${webhookId}/rotate`, { key });
    expectEnvelope(rotated, 200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).not.toBe(secret);
    await call("POST", `/webhooks/${webhookId}/test`, { key });
    const second = await eventually(async () => (await receivedBy(name))[1], "the second test message");
    expect(second.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(() => new Webhook(newSecret).verify(second.body, second.headers)).not.toThrow();
    expect(() => new Webhook(secret).verify(second.body, second.headers)).not.toThrow();
  });

  it("a 410 disables the endpoint and records webhook.disabled", async () => {
    const { url } = receiver("gone");
    const { webhookId } = await register(url);
    await call("POST", `/webhooks/${webhookId}/test`, { key });
    const disabled = await eventually(async () => {
      const shown = await call("GET", `/webhooks/${webhookId}`, { key });
      return shown.body.data.enabled ? undefined : shown.body.data;
    }, "the endpoint to be disabled");
    expect(disabled.disabledReason).toBe("the endpoint answered 410 Gone");
    const feed = await call("GET", "/events/?type=webhook.disabled&limit=500", { key });
    expect(feed.body.data.some((e) => e.type === "webhook.disabled" && e.data.webhookId === webhookId)).toBe(true);
    expectEnvelope(await call("PUT", `/webhooks/${webhookId}`, { key, body: { enabled: true } }), 200);
    expect((await call("GET", `/webhooks/${webhookId}`, { key })).body.data).toMatchObject({
      enabled: true,
      disabledReason: null,
    });
  });

  it("never answers a 5xx to random bodies", async () => {
    const { webhookId } = await register(receiver("ok").url);
    const paths: [string, string][] = [
      ["POST", "/webhooks/"],
      ["PUT", `/webhooks/${webhookId}`],
      ["POST", `/webhooks/${webhookId}/replay`],
    ];
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          url: fc.oneof(fc.string(), fc.constantFrom("https://x", "javascript:alert(1)", "http://hooks.test/ok/x")),
          types: fc.oneof(fc.jsonValue(), fc.array(fc.constantFrom("publish.active", "nope"))),
          enabled: fc.jsonValue(),
          after: fc.oneof(fc.integer(), fc.jsonValue()),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...paths), body, async ([method, path], payload) => {
        const answer = await call(method, path, { key, body: payload });
        expect(answer.status, JSON.stringify(payload)).toBeLessThan(500);
      }),
      { numRuns: 100 },
    );
  });

  it("documents every payload as an OpenAPI 3.1 webhook", async () => {
    const document = await call("GET", "/openapi.json");
    const webhooks = (document.body as unknown as { webhooks: Record<string, unknown> }).webhooks;
    expect(Object.keys(webhooks).sort()).toEqual([...EVENT_TYPES, "webhook.test"].sort());
  });

  it("hands a request's events to delivery right after it, without waiting for the cron", async () => {
    const { name, url } = receiver("ok");
    await register(url, { types: ["publish.cancelled"] });
    const userId = await connectedSeller(key, internalKey);
    const ad = await createAd(key, userId);
    // A placement that never started (no message), removed by the client: no job runs after this request.
    await env.DB.prepare(
      "INSERT INTO queue_items (ad_id, user_id, portal, action) VALUES (?, ?, 'portal_a', 'publish')",
    )
      .bind(ad.adId, userId)
      .run();
    expectEnvelope(
      await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }),
      200,
    );
    const [delivered] = await eventually(async () => {
      const all = await receivedBy(name);
      return all.length > 0 ? all : undefined;
    }, "the cancelled event");
    expect(payloadOf(delivered as Received)).toMatchObject({ type: "publish.cancelled", data: { adId: ad.adId } });
  });
});
