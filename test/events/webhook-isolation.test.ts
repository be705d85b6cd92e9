import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import type { Env } from "../../src/env";
import { DELIVERY_LIMITS, ENDPOINTS_PER_CLIENT, REPLAY_MAX_EVENTS } from "../../src/services/events";
import { eventsOf, heldBy, payloadOf, receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { BASE, call, eventually, expectEnvelope, expectError, newClient } from "../harness/api";
import { interceptD1 } from "../harness/d1";
import { activate, createUser, userBody } from "../harness/data";
import { publicationTime } from "../harness/marketplace";

/**
 * One client cannot slow another: webhook deliveries on a queue of their own, bounded per endpoint (in
 * the queue, in flight, a breaker), replays bounded, and dispatch that reads only the writer's endpoints.
 */

/**
 * Removes an endpoint that hangs: its queued deliveries end at once. (The local runtime hands a queue
 * one batch at a time, so deliveries left hanging would hold up the other tests' deliveries.)
 */
const stopHanging = async (apiKey: string, webhookId: number) =>
  expectEnvelope(await call("DELETE", `/webhooks/${webhookId}`, { key: apiKey }), 200);

const webhookOf = async (apiKey: string, webhookId: number) =>
  (await call("GET", `/webhooks/${webhookId}`, { key: apiKey })).body.data;

describe("isolation", () => {
  it("an endpoint that hangs under a replay leaves another client's publishing on time, and is held to its limits", async () => {
    const a = await newClient({ partner: true });
    const b = await newClient({ partner: true });
    const seller = await createUser(b.key);
    await activate(b.key, seller);
    const before = await publicationTime(b.key, seller.userId);

    const hang = receiver("hang");
    const { webhookId } = await registerWebhook(a.key, hang.url);
    await eventsOf(a.client.id, 30);
    const replay = await call("POST", `/webhooks/${webhookId}/replay`, { key: a.key, body: { after: 0 } });
    expectEnvelope(replay, 200);
    expect(replay.body.data).toEqual({ queued: 30 });
    await eventually(async () => ((await heldBy(hang.name)).open > 0 ? true : undefined), "a delivery held open");

    const during = await publicationTime(b.key, seller.userId);
    // Sharing a queue, B's placement waited for A's deliveries to time out (10 s each); now it does not.
    expect(during).toBeLessThan(2 * before + DELIVERY_LIMITS.timeoutMs / 2);
    const endpoint = await webhookOf(a.key, webhookId);
    expect(endpoint.queuedDeliveries).toBeLessThanOrEqual(DELIVERY_LIMITS.inQueue);
    expect((await heldBy(hang.name)).most).toBeLessThanOrEqual(DELIVERY_LIMITS.concurrent);
    await stopHanging(a.key, webhookId);
  }, 60_000);

  it("a breaker pauses an endpoint after 5 failures in a row, its deliveries wait, and it resumes by itself", async () => {
    const client = await newClient({ partner: true });
    const flaky = receiver(`flaky${DELIVERY_LIMITS.breakerFailures}`);
    const { webhookId } = await registerWebhook(client.key, flaky.url);
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key: client.key }), 200);
    const paused = await eventually(async () => {
      const endpoint = await webhookOf(client.key, webhookId);
      return endpoint.pausedUntil ? endpoint : undefined;
    }, "the breaker to pause the endpoint");
    expect(paused.pausedReason).toMatch(/^5 or more deliveries in a row failed \(last: HTTP 500\)$/);
    // While paused, nothing reaches the endpoint.
    const [seen, now] = [await receivedBy(flaky.name), await webhookOf(client.key, webhookId)];
    if (now.pausedUntil) expect(seen).toHaveLength(DELIVERY_LIMITS.breakerFailures);
    // The pause ends by itself; the waiting delivery goes out and succeeds; the breaker closes.
    const all = await eventually(async () => {
      const received = await receivedBy(flaky.name);
      return received.some((r) => r.status === 200) ? received : undefined;
    }, "the delivery after the pause");
    expect(all).toHaveLength(DELIVERY_LIMITS.breakerFailures + 1);
    // A test message keeps one webhook-id over all its attempts.
    expect(new Set(all.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(all[0]?.headers["user-agent"]).toMatch(/^ClassifiedAdsAPI\//);
    await eventually(async () => {
      const endpoint = await webhookOf(client.key, webhookId);
      return endpoint.pausedUntil === null ? true : undefined;
    }, "the breaker to close");
  }, 60_000);
});

describe("bounds", () => {
  it(`a client has at most ${ENDPOINTS_PER_CLIENT} endpoints, also when it creates them all at once`, async () => {
    const client = await newClient({ partner: true });
    const answers = await Promise.all(
      Array.from({ length: ENDPOINTS_PER_CLIENT + 4 }, () =>
        call("POST", "/webhooks/", { key: client.key, body: { url: receiver("ok").url } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(ENDPOINTS_PER_CLIENT);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(4);
    for (const answer of refused) expectError(answer, "webhook_limit_reached");
    expect((await call("GET", "/webhooks/", { key: client.key })).body.data).toHaveLength(ENDPOINTS_PER_CLIENT);
  });

  it("a replay starts from an event of the client's own, covers at most 1,000 events, runs one at a time, and counts only the client's", async () => {
    const client = await newClient({ partner: true });
    const other = await newClient({ partner: true });
    const hang = receiver("hang");
    const { webhookId } = await registerWebhook(client.key, hang.url);
    const theirs = await eventsOf(other.client.id, 3);
    const own = await eventsOf(client.client.id, DELIVERY_LIMITS.inQueue + 20);
    const replay = (after: number) =>
      call("POST", `/webhooks/${webhookId}/replay`, { key: client.key, body: { after } });

    for (const after of [theirs[0] as number, (own.at(-1) as number) + 1_000_000, 1e9]) {
      const refused = await replay(after);
      expectError(refused, "validation_failed");
      expect(refused.body.errors[0]).toBe(`after: ${after} is not an event of this client`);
    }
    // From its first event: the other 119 of its own, none of the other client's.
    const started = await replay(own[0] as number);
    expectEnvelope(started, 200);
    expect(started.body.data).toEqual({ queued: own.length - 1 });
    // The endpoint holds at most its bound in the queue; the replay is still running.
    expect((await webhookOf(client.key, webhookId)).queuedDeliveries).toBeLessThanOrEqual(DELIVERY_LIMITS.inQueue);
    expectError(await replay(0), "replay_in_progress");
    await stopHanging(client.key, webhookId);

    const many = await newClient({ partner: true });
    const manyHook = await registerWebhook(many.key, receiver("ok").url);
    const log = await eventsOf(many.client.id, REPLAY_MAX_EVENTS + 1);
    const tooMany = await call("POST", `/webhooks/${manyHook.webhookId}/replay`, {
      key: many.key,
      body: { after: 0 },
    });
    expectError(tooMany, "validation_failed");
    expect(tooMany.body.errors[0]).toBe(
      `after: a replay delivers at most ${REPLAY_MAX_EVENTS} events; ${REPLAY_MAX_EVENTS + 1} follow event 0`,
    );
    expectEnvelope(
      await call("POST", `/webhooks/${manyHook.webhookId}/replay`, { key: many.key, body: { after: log[0] } }),
      200,
    );
  }, 60_000);

  it("the event feed refuses a cursor beyond the latest event or out of range", async () => {
    const client = await newClient({ partner: true });
    const [latest] = await eventsOf(client.client.id, 1);
    expectEnvelope(await call("GET", `/events/?after=${latest}`, { key: client.key }), 200);
    // Another client's event is the platform's latest: a refusal names no id but the one sent.
    const [othersLatest] = await eventsOf((await newClient({ partner: true })).client.id, 1);
    for (const after of [`${(latest as number) + 1_000_000}`, "99999999999999999999"]) {
      const answer = await call("GET", `/events/?after=${after}`, { key: client.key });
      expectError(answer, "validation_failed");
      expect(answer.body.errors[0]).toMatch(/^after: /);
      const message = String(answer.body.errors[0]);
      expect(message).not.toContain(String(othersLatest));
    }
    // Beyond the latest event: the only number besides the one sent is 0, where to start again.
    const beyond = `${(othersLatest as number) + 1}`;
    const refused = await call("GET", `/events/?after=${beyond}`, { key: client.key });
    expectError(refused, "validation_failed");
    expect(String(refused.body.errors[0]).replace(beyond, "").match(/\d+/g)).toEqual(["0"]);
  });

  it("after=latest answers no events and the caller's own cursor, from which the next event arrives once", async () => {
    const client = await newClient({ partner: true });
    const fresh = await call("GET", "/events/?after=latest", { key: client.key });
    expectEnvelope(fresh, 200);
    expect(fresh.body).toMatchObject({ data: [], cursor: 0 });
    const [own] = await eventsOf(client.client.id, 1);
    // Other clients' events after it move nothing: the cursor is the caller's latest.
    await eventsOf((await newClient({ partner: true })).client.id, 2);
    const now = await call("GET", "/events/?after=latest", { key: client.key });
    expect(now.body).toMatchObject({ data: [], cursor: own });
    const [next] = await eventsOf(client.client.id, 1);
    const polled = await call("GET", `/events/?after=${now.body.cursor}`, { key: client.key });
    expectEnvelope(polled, 200);
    expect(polled.body.data.map((e: { eventId: number }) => e.eventId)).toEqual([next]);
    expectError(await call("GET", "/events/?after=earliest", { key: client.key }), "validation_failed");
  });
});

describe("cost and the small ones", () => {
  it("a write reads only its client's endpoints, and a refused write does no webhook work", async () => {
    const client = await newClient({ partner: true });
    const seen: string[] = [];
    const db = interceptD1(env.DB, async (_, sql) => {
      seen.push(...sql.filter((q) => q.includes("webhook_endpoints")));
    });
    const scoped = { ...env, DB: db } as Env;
    const run = async (body: unknown) => {
      const context = createExecutionContext();
      const response = await app.fetch(
        new Request(`${BASE}/users/`, {
          method: "POST",
          headers: { Authorization: `Bearer ${client.key}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        }),
        scoped,
        context,
      );
      await waitOnExecutionContext(context);
      return response.status;
    };
    expect(await run({ email: "not an address" })).toBe(400);
    expect(seen).toEqual([]);
    const created = await run(userBody());
    expect(created).toBe(200);
    // One query, scoped to the writer's client by its index.
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatch(/"webhook_endpoints"\."client_id" = \?/);
  });

  it("a DNS resolver that fails answers 503 dns_unavailable on create, a name that does not resolve 400", async () => {
    const client = await newClient({ partner: true });
    const sandbox = { ...env, ENVIRONMENT: "sandbox", OUTBOUND_DNS_RESOLVER: "http://dns.test/dns-query" } as Env;
    const create = async (url: string) => {
      const response = await app.fetch(
        new Request(`${BASE}/webhooks/`, {
          method: "POST",
          headers: { Authorization: `Bearer ${client.key}`, "Content-Type": "application/json" },
          body: JSON.stringify({ url }),
        }),
        sandbox,
        createExecutionContext(),
      );
      return {
        status: response.status,
        body: await response.json<{ errors: string[]; errorDetails: { code: string }[] }>(),
      };
    };
    const down = await create("https://hooks.servfail.test/in");
    expect(down.status).toBe(503);
    expect(down.body.errorDetails[0]).toMatchObject({ code: "dns_unavailable", field: "url" });
    expect(down.body.errors[0]).toMatch(/^url: the DNS resolver answered HTTP 502$/);
    for (const host of ["hooks.garbled.test", "hooks.nostatus.test", "hooks.nodata.test"]) {
      const garbled = await create(`https://${host}/in`);
      expect(garbled.status, host).toBe(503);
      expect(garbled.body.errorDetails[0]).toMatchObject({ code: "dns_unavailable", field: "url" });
      expect(garbled.body.errors[0]).toBe("url: the DNS resolver's answer is not a DNS answer");
    }
    const unknown = await create("https://nowhere.test/in");
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0]).toBe("url: the host name does not resolve");
  });

  it("an internal client's feed carries no other client's webhook endpoints", async () => {
    const partner = await newClient({ partner: true });
    const internal = await newClient({ internal: true });
    const gone = receiver("gone");
    const { webhookId } = await registerWebhook(partner.key, gone.url);
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key: partner.key }), 200);
    await eventually(async () => {
      const feed = await call("GET", "/events/?type=webhook.disabled", { key: partner.key });
      return feed.body.data.some((e) => e.type === "webhook.disabled" && e.data.webhookId === webhookId)
        ? true
        : undefined;
    }, "webhook.disabled in the partner's feed");
    const internalFeed = await call("GET", "/events/?type=webhook.disabled&limit=500", { key: internal.key });
    expect(internalFeed.body.data.filter((e) => e.type === "webhook.disabled" && e.data.url === gone.url)).toEqual([]);
  });

  it("a client has one endpoint per URL: registering or moving to a URL it has answers 409 webhook_exists", async () => {
    const client = await newClient({ partner: true });
    const first = receiver("ok");
    await registerWebhook(client.key, first.url);
    const again = await call("POST", "/webhooks/", { key: client.key, body: { url: first.url } });
    expectError(again, "webhook_exists");
    expect(again.body.errorDetails?.[0]).toMatchObject({ field: "url" });
    const { webhookId } = await registerWebhook(client.key, receiver("ok").url);
    expectError(
      await call("PUT", `/webhooks/${webhookId}`, { key: client.key, body: { url: first.url } }),
      "webhook_exists",
    );
    // Another client may use the same URL.
    await registerWebhook((await newClient({ partner: true })).key, first.url);
    expect((await call("GET", "/webhooks/", { key: client.key })).body.data).toHaveLength(2);
  });

  it("writes every time of an event and of its webhook payload as YYYY-MM-DD hh:mm:ss", async () => {
    const client = await newClient({ partner: true });
    const hook = receiver("ok");
    const { webhookId } = await registerWebhook(client.key, hook.url);
    await env.DB.prepare(
      `INSERT INTO events (client_id, type, data) VALUES (?, 'bid.received', json_object('bidId', 1, 'amount', 27000, 'name', 'Bieder 1', 'message', NULL, 'placedAt', '2026-11-22T13:03:10.000Z'))`,
    )
      .bind(client.client.id)
      .run();
    const feed = await call("GET", "/events/?type=bid.received", { key: client.key });
    expect(feed.body.data[0]?.data).toMatchObject({ placedAt: "2026-11-22 14:03:10" });
    // A write of the client hands its new events to delivery (here: a test message).
    expectEnvelope(await call("POST", `/webhooks/${webhookId}/test`, { key: client.key }), 200);
    const payloads = await eventually(async () => {
      const received = (await receivedBy(hook.name)).map(payloadOf);
      return received.length === 2 ? received : undefined;
    }, "the event and the test message");
    for (const payload of payloads) expect(payload.timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(payloads.find((p) => p.type === "bid.received")?.data).toMatchObject({
      data: { placedAt: "2026-11-22 14:03:10" },
    });
  });
});
