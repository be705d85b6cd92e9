import { createScheduledController, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import worker from "../../src/index";
import { seal } from "../../src/lib/secretBox";
import { archiveOldLogs } from "../../src/services/archive";
import { call, defined, eventually, expectEnvelope, newClient, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd } from "../harness/data";
import { connectedSeller, MIXED_ADS, MIXED_REFUSED, publishMixedAds, settledPublication } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

interface FeedEvent {
  eventId: number;
  type: string;
  userId: number;
  adId: number | null;
  portal: string | null;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** Reads the feed from the start for one user, page by page, as a client would. */
async function readAll(userId: number, apiKey = key, limit = 50) {
  const seen: FeedEvent[] = [];
  let after = 0;
  for (;;) {
    const page = await call("GET", `/events/?after=${after}&userId=${userId}&limit=${limit}`, { key: apiKey });
    expectEnvelope(page, 200);
    seen.push(...(page.body.data as FeedEvent[]));
    if (page.body.data.length < limit) return seen;
    after = page.body.cursor as number;
  }
}

describe("the event feed", () => {
  it(`shows every ad's pending and exactly one terminal event, in order, across ${MIXED_ADS} ads with refusals and retries`, async () => {
    const { userId, adIds } = await publishMixedAds(key, internalKey);
    const events = await eventually(async () => {
      const all = await readAll(userId);
      const terminal = all.filter((e) => e.type === "publish.active" || e.type === "publish.error");
      return terminal.length >= MIXED_ADS ? all : undefined;
    }, "a terminal event for every ad");
    // Ascending ids, each once.
    const ids = events.map((e) => e.eventId);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const adId of adIds) {
      const own = events.filter((e) => e.adId === adId);
      expect(own.map((e) => e.type)[0], `ad ${adId}`).toBe("publish.pending");
      const terminal = own.filter((e) => e.type === "publish.active" || e.type === "publish.error");
      expect(terminal, `ad ${adId}`).toHaveLength(1);
    }
    const errors = events.filter((e) => e.type === "publish.error");
    expect(errors).toHaveLength(MIXED_REFUSED);
    expect(errors[0]?.data).toMatchObject({ kind: "placement", reason: "rejected by portal" });
    const active = events.find((e) => e.type === "publish.active");
    expect(active).toMatchObject({ userId, portal: "portal_a" });
    expect(active?.data).toMatchObject({
      kind: "placement",
      remoteAdId: expect.any(Number),
      queueItemId: expect.any(Number),
    });
    // Every time of an event reads as the rest of the API: YYYY-MM-DD hh:mm:ss, Europe/Amsterdam.
    expect(active?.data.closeDate).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(active?.data.startDate).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(active?.occurredAt).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

    // Filtered by type, and the feed of another client holds none of it.
    const onlyErrors = await call("GET", `/events/?userId=${userId}&type=publish.error&limit=500`, { key });
    expect(onlyErrors.body.data).toHaveLength(MIXED_REFUSED);
    const other = await newClient({ partner: true });
    expectEnvelope(await call("GET", `/events/?userId=${userId}`, { key: other.key }), 404);
    const theirs = await call("GET", "/events/?limit=500", { key: other.key });
    expect(theirs.body.data).toEqual([]);
    expect(theirs.body.cursor).toBe(0);
  }, 180_000);

  it("reports unpublishing, features and a cancelled placement", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const ad = await createAd(key, userId, { title: "Bank met gebeurtenissen" });
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    await eventually(async () => {
      const all = await readAll(userId);
      return all.some((e) => e.type === "publish.active") ? all : undefined;
    }, "the placement");
    await call("POST", "/features/", { key, body: { adId: ad.adId, portal: "portal_a", feature: "omhoogplaatsen" } });
    await eventually(async () => {
      const all = await readAll(userId);
      return all.some((e) => e.type === "feature.active") ? all : undefined;
    }, "the feature");
    await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const all = await eventually(async () => {
      const seen = await readAll(userId);
      return seen.some((e) => e.type === "publish.offline") ? seen : undefined;
    }, "the unpublishing");
    expect(all.map((e) => e.type)).toEqual([
      "publish.pending",
      "publish.active",
      "feature.active",
      "publish.pending",
      "publish.offline",
    ]);
    expect(all[2]?.data).toMatchObject({ feature: "omhoogplaatsen" });
    expect(all[4]?.data).toMatchObject({ kind: "unpublish" });

    // A placement removed before it started ends cancelled.
    const waiting = await createAd(key, userId);
    await env.DB.prepare(
      "INSERT INTO queue_items (ad_id, user_id, portal, action) VALUES (?, ?, 'portal_a', 'publish')",
    )
      .bind(waiting.adId, userId)
      .run();
    await call("DELETE", "/publish/", { key, body: { userId, adId: waiting.adId, portal: "portal_a" } });
    const cancelled = await call("GET", `/events/?userId=${userId}&type=publish.cancelled`, { key });
    expect(cancelled.body.data).toHaveLength(1);
    expect(cancelled.body.data[0]).toMatchObject({ adId: waiting.adId, data: { reason: "removed before processing" } });
  }, 60_000);

  it("validates its parameters and purges events after 30 days", async () => {
    for (const query of ["type=publish.nope", "limit=501", "limit=0", "after=-1", "after=x"])
      expectEnvelope(await call("GET", `/events/?${query}`, { key }), 400);
    const userId = await connectedSeller(key, internalKey);
    const ad = await createAd(key, userId);
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "website" } });
    await env.DB.prepare("UPDATE events SET occurred_at = '2000-01-01T00:00:00.000Z' WHERE user_id = ?")
      .bind(userId)
      .run();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env);
    // All go but the newest event of all (see the next test).
    const left = await env.DB.prepare(
      "SELECT count(*) AS n FROM events WHERE occurred_at < '2001-01-01' AND id < (SELECT max(id) FROM events)",
    ).first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("keeps the newest event and webhook delivery through any purge, so their ids never come back", async () => {
    const userId = await connectedSeller(key, internalKey);
    const ad = await createAd(key, userId);
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "website" } });
    await settledPublication(key, userId, ad.adId, "website");
    const { clientId } = (await call("GET", "/client", { key })).body.data;
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO webhook_endpoints (client_id, url, secret) VALUES (?, 'https://hooks.test/', 'x')",
      ).bind(clientId),
      env.DB.prepare(
        "INSERT INTO webhook_deliveries (endpoint_id, message_id, attempt) VALUES ((SELECT max(id) FROM webhook_endpoints), 'msg_1', 1)",
      ),
    ]);
    const newest = () =>
      env.DB.prepare(
        "SELECT (SELECT max(id) FROM events) AS event, (SELECT max(id) FROM webhook_deliveries) AS delivery",
      ).first<{ event: number; delivery: number }>();
    const before = defined(await newest());
    // A thousand years on, every row is past the retention.
    await archiveOldLogs(
      { db: getDb(env.DB), env: onTestShard(env, 1), now: new Date("3000-01-01T00:00:00Z") },
      { limit: 100_000 },
    );
    const after = defined(await newest());
    expect(after.event).toBeGreaterThanOrEqual(before.event);
    expect(after.delivery).toBeGreaterThanOrEqual(before.delivery);
    // The reader holding the newest id as its cursor sees the next event.
    await call("PUT", "/publish/", { key, body: { userId, adId: ad.adId, portal: "website" } });
    const next = await eventually(async () => {
      const page = await call("GET", `/events/?userId=${userId}&after=${before.event}`, { key });
      return page.body.data.length > 0 ? page.body.data : undefined;
    }, "the event after the purge");
    expect(next[0]).toMatchObject({ type: "publish.pending", adId: ad.adId, data: { kind: "update" } });
  });

  it("reports images, bids, statistics and an expired connection", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const ad = await createAd(key, userId, { price: { model: "fixed", price: 30000 } });
    await call("POST", `/images/${ad.adId}`, {
      key,
      body: {
        images: [{ image: { url: "http://images.test/red.png" } }, { image: { url: "http://images.test/notes.txt" } }],
      },
    });
    const images = await eventually(async () => {
      const all = await readAll(userId);
      const found = all.filter((e) => e.type.startsWith("image."));
      return found.length === 2 ? found : undefined;
    }, "both image events");
    expect(images.map((e) => e.type).sort()).toEqual(["image.failed", "image.stored"]);
    expect(images.find((e) => e.type === "image.stored")?.data.url).toMatch(/^http:\/\/api\.test\/media\/images\//);
    expect(images.find((e) => e.type === "image.failed")?.data.reason).toBe("not a JPEG, PNG, WebP or GIF image");
    // A job still waiting when the images are replaced reports its cancellation.
    const waiting = await env.DB.prepare(
      "INSERT INTO image_jobs (ad_id, user_id, source_url) VALUES (?, ?, 'http://images.test/blue.jpg') RETURNING id",
    )
      .bind(ad.adId, userId)
      .first<{ id: number }>();
    await call("POST", `/images/${ad.adId}`, {
      key,
      body: { images: [{ image: { url: "http://images.test/red.png" } }] },
    });
    const replaced = await call("GET", `/events/?userId=${userId}&type=image.failed`, { key });
    expect(replaced.body.data.map((e) => e.data)).toContainEqual({
      jobId: waiting?.id,
      reason: "replaced by a later request",
    });

    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    await eventually(async () => {
      const all = await readAll(userId);
      return all.some((e) => e.type === "publish.active") ? true : undefined;
    }, "the placement");
    const cron = () =>
      worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env);
    await cron();
    const market = (await readAll(userId)).filter((e) => e.type === "bid.received" || e.type === "statistics.updated");
    expect(market.filter((e) => e.type === "bid.received")).toHaveLength(1);
    expect(market.find((e) => e.type === "bid.received")?.data).toMatchObject({ amount: 27000 });
    expect(market.filter((e) => e.type === "statistics.updated").length).toBeGreaterThan(0);
    // Pulled again: nothing new, so no new events, and no statistics row written (a trigger counts writes).
    await env.DB.batch([
      env.DB.prepare("CREATE TABLE statistics_writes_seen (n INTEGER)"),
      env.DB.prepare(
        "CREATE TRIGGER statistics_updates_seen AFTER UPDATE ON ad_statistics BEGIN INSERT INTO statistics_writes_seen VALUES (1); END",
      ),
      env.DB.prepare(
        "CREATE TRIGGER statistics_inserts_seen AFTER INSERT ON ad_statistics BEGIN INSERT INTO statistics_writes_seen VALUES (1); END",
      ),
      env.DB.prepare("UPDATE portal_connections SET market_data_pulled_at = NULL WHERE user_id = ?").bind(userId),
    ]);
    try {
      await cron();
      const writes = await env.DB.prepare("SELECT count(*) AS n FROM statistics_writes_seen").first<{ n: number }>();
      expect(writes?.n).toBe(0);
    } finally {
      await env.DB.batch([
        env.DB.prepare("DROP TRIGGER statistics_updates_seen"),
        env.DB.prepare("DROP TRIGGER statistics_inserts_seen"),
        env.DB.prepare("DROP TABLE statistics_writes_seen"),
      ]);
    }
    const again = (await readAll(userId)).filter((e) => e.type === "bid.received" || e.type === "statistics.updated");
    expect(again).toHaveLength(market.length);

    // The portal refuses to renew the access: the connection ends, once, with an event.
    await env.DB.prepare(
      "UPDATE portal_connections SET access_token_expire = '2000-01-01T00:00:00.000Z', refresh_token = ? WHERE user_id = ?",
    )
      .bind(await seal("not-a-refresh-token", env), userId)
      .run();
    await call("PUT", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const expired = await eventually(async () => {
      const all = await readAll(userId);
      return all.find((e) => e.type === "connection.expired");
    }, "the expired connection");
    expect(expired).toMatchObject({ portal: "portal_a", data: { reason: "the portal refused to renew the access" } });
    const connection = await call("GET", `/oauth/${userId}/portal_a/`, { key });
    expect(connection.body.data.status).toBe(false);
  }, 60_000);
});
