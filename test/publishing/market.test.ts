import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  getQueueResult,
} from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { executeJobs } from "../../src/jobs/execute";
import type { JobMessage } from "../../src/services/shared";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, eventually, expectEnvelope, expectError, newClient, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { runPublishJob } from "../harness/jobs";
import { connectedSeller, walletBalance } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const seller = (credit: number) => connectedSeller(key, internalKey, credit);

const publishStatus = async (userId: number, adIds: number[]) => {
  const answer = await call("POST", "/status/", { key, body: { userId, adId: adIds } });
  return answer.body.data.map((s) => ({
    adId: s.adId,
    ...defined(s.portals.find((p) => p.portal === "portal_a")).publish,
  }));
};
const published = (userId: number, adId: number) =>
  eventually(async () => {
    const [state] = await publishStatus(userId, [adId]);
    return state?.active ? state : undefined;
  }, `ad ${adId} active`);

describe("features", () => {
  it("lists features with prices, refuses unpublished ads and missing money, and activates a bought one", async () => {
    const userId = await seller(1000);
    const ad = await createAd(key, userId);
    const offers = await call("GET", `/features/portal_a/${ad.adId}`, { key });
    expectEnvelope(offers, 200);
    expect(offers.body.data.map((f: { feature: string }) => f.feature)).toEqual([
      "omhoogplaatsen",
      "dagtopper",
      "dagtopper3",
      "dagtopper7",
      "homepaginaAdvertentie",
      "url",
    ]);
    const dagtopper7 = offers.body.data.find((f) => f.feature === "dagtopper7");
    const dagtopper = defined(offers.body.data.find((f) => f.feature === "dagtopper"));
    expect(dagtopper7).toMatchObject({
      available: true,
      active: false,
      displayName: "Dagtopper (7 dagen)",
      price: Number(dagtopper.price) * 7,
    });
    expect((await call("GET", `/features/?portal=website&adId=${ad.adId}`, { key })).body.data).toEqual([]);

    const unpublished = await call("POST", "/features/", {
      key,
      body: { adId: ad.adId, portal: "portal_a", feature: "omhoogplaatsen" },
    });
    expectEnvelope(unpublished, 409);
    expect(unpublished.body.errors).toEqual([
      `portal: portal_a - adId: ${ad.adId} - this advertisement is not published`,
    ]);

    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    await published(userId, ad.adId);
    const tooDear = await call("POST", "/features/", {
      key,
      body: { adId: ad.adId, portal: "portal_a", feature: "dagtopper7" },
    });
    expectError(tooDear, "insufficient_means");
    expect(tooDear.body.errors).toEqual([`portal: portal_a - adId: ${ad.adId} - insufficient means`]);

    const bought = await call("POST", "/features/", {
      key,
      body: { adId: ad.adId, portal: "portal_a", feature: "omhoogplaatsen" },
    });
    expectEnvelope(bought, 200);
    const price = defined(offers.body.data[0]);
    expect(await walletBalance(key, userId)).toBe(1000 - (Number(price.price) + price.priceAdditional));
    const status = await eventually(async () => {
      const answer = await call("GET", `/status/${userId}/${ad.adId}`, { key });
      const features = answer.body.data[0]?.portals[0]?.features;
      return Array.isArray(features) && features[0]?.active ? features : undefined;
    }, "the feature to be active");
    expect(status[0]).toMatchObject({ feature: "omhoogplaatsen", pending: false, error: false, active: true });
    expect((await call("GET", `/features/portal_a/${ad.adId}`, { key })).body.data[0]?.active).toBe(true);
  });
});

describe("status", () => {
  it("answers per ad, asks the portal with force, and totals the user's ads", async () => {
    const userId = await seller(0);
    const live = await createAd(key, userId);
    await createAd(key, userId, { status: "archive" });
    await createAd(key, userId, { status: "concept" });
    await call("POST", "/publish/", { key, body: { userId, adId: live.adId, portal: "portal_a" } });
    const state = await published(userId, live.adId);
    const forced = await call("POST", "/status/", { key, body: { userId, adId: live.adId, force: true } });
    expectEnvelope(forced, 200);
    expect(forced.body.data[0]?.portals[0]?.publish).toMatchObject({
      active: true,
      online: true,
      remoteAdId: state.remoteAdId,
    });
    expect(forced.body).toMatchObject({ totalItems: 1, itemsPerPage: 1000 });
    expectEnvelope(
      await call("POST", "/status/", { key, body: { userId, adId: [live.adId], itemsPerPage: 1001 } }),
      400,
    );

    const totals = await call("GET", `/status/totals/${userId}/`, { key });
    expect(totals.body.data).toEqual({ userId, active: 1, concept: 1, archive: 1, total: 3 });
  });

  it("refreshes an expired access token transparently", async () => {
    const userId = await seller(0);
    const ad = await createAd(key, userId);
    await env.DB.prepare(
      "UPDATE portal_connections SET access_token_expire = '2000-01-01T00:00:00.000Z' WHERE user_id = ?",
    )
      .bind(userId)
      .run();
    await marketplace("portal_a").expireTokens();
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    await published(userId, ad.adId);
    const connection = await env.DB.prepare("SELECT access_token_expire FROM portal_connections WHERE user_id = ?")
      .bind(userId)
      .first<{ access_token_expire: string }>();
    expect((connection?.access_token_expire ?? "") > new Date().toISOString()).toBe(true);
  });
});

describe("bids and statistics", () => {
  it("are pulled by the cron, then read, marked and combined", async () => {
    const userId = await seller(0);
    const first = await createAd(key, userId, { price: { model: "fixed", price: 20000 } });
    const second = await createAd(key, userId, { price: { model: "fixed", price: 10000 } });
    await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: [first.adId, second.adId], portal: "portal_a" },
    });
    await published(userId, first.adId);
    await published(userId, second.adId);

    const controller = createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" });
    await worker.scheduled(controller, env);

    const bids = await call("GET", `/bids/${userId}/`, { key });
    expectEnvelope(bids, 200);
    expect(bids.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ adId: first.adId, portal: "portal_a", amount: 18000, isRead: false }),
      ]),
    );
    const ofFirst = await call("GET", `/bids/${userId}/${first.adId}`, { key });
    expect(ofFirst.body.data.every((b: { adId: number }) => b.adId === first.adId)).toBe(true);
    const bidId = ofFirst.body.data[0]?.bidId;
    expectEnvelope(
      await call("POST", "/bids/markasread/", { key, body: { userId, portal: "portal_a", bidId: [bidId] } }),
      200,
    );
    expect((await call("GET", `/bids/${userId}/${first.adId}`, { key })).body.data[0]?.isRead).toBe(true);
    await call("DELETE", "/bids/markasread/", { key, body: { userId, portal: "portal_a", bidId: [bidId] } });
    expect((await call("GET", `/bids/${userId}/${first.adId}`, { key })).body.data[0]?.isRead).toBe(false);

    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const stats = await call("POST", "/statistics/", {
      key,
      body: { adId: [first.adId, second.adId], dateStart: yesterday, dateEnd: today },
    });
    expectEnvelope(stats, 200);
    expect(stats.body.data).toMatchObject({
      adId: [first.adId, second.adId],
      dateStart: yesterday,
      dateEnd: today,
      statistics_portal_b: false,
      totals_portal_b: false,
    });
    // The portal's own statistics: an array of days and an object of totals (false when not asked for).
    const days = stats.body.data.statistics_portal_a as { date: string; views: number }[];
    const totals = stats.body.data.totals_portal_a as { views: { total: number } };
    expect(days.map((d) => d.date)).toEqual([yesterday, today]);
    expect(totals.views.total).toBe(days.reduce((sum, d) => sum + d.views, 0));
    const views = totals.views;
    expect(views).toMatchObject({
      type: "views",
      minimum: expect.any(Number),
      maximum: expect.any(Number),
      average: Math.round(views.total / 2),
    });
    const onlyB = await call("POST", "/statistics/", {
      key,
      body: { adId: first.adId, dateStart: yesterday, dateEnd: today, portal: "portal_b", showDaily: false },
    });
    expect(onlyB.body.data.statistics_portal_a).toBe(false);
    expectEnvelope(
      await call("POST", "/statistics/", { key, body: { adId: first.adId, dateStart: today, dateEnd: yesterday } }),
      400,
    );
  });
});

describe("reliability", () => {
  /** Ads published in batches of 50 (two and part of a third); every tenth from the fourth is refused. */
  const ADS = 120;
  const REFUSED = ADS / 10;
  it(`ends ${ADS} ads active or in error with a reason, charging each once even when a message arrives twice`, async () => {
    const userId = await seller(1_000_000);
    const adIds: number[] = [];
    for (let i = 0; i < ADS; i += 1) {
      const title = i % 10 === 3 ? `Brommer ${i} [reject]` : i % 10 === 7 ? `Brommer ${i} [flaky]` : `Brommer ${i}`;
      adIds.push((await createAd(key, userId, { categoryId: PAID_CATEGORY, title, externalAdId: i })).adId);
    }
    for (let i = 0; i < adIds.length; i += 50) {
      const answer = await call("POST", "/publish/batch", {
        key,
        body: { userId, adId: adIds.slice(i, i + 50), portal: "portal_a" },
      });
      expect(answer.body.data.every((o: { result: boolean }) => o.result)).toBe(true);
    }
    // Deliver some messages a second time, as a queue may.
    const items = await env.DB.prepare("SELECT id FROM queue_items WHERE user_id = ? ORDER BY id LIMIT 20")
      .bind(userId)
      .all<{ id: number }>();
    const batch = createMessageBatch<JobMessage>(
      "jobs",
      items.results.map((item, i) => ({
        id: `dup-${i}`,
        timestamp: new Date(),
        attempts: 1,
        body: { kind: "publish", itemId: item.id },
      })),
    );
    const ctx = createExecutionContext();
    await executeJobs(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.length + result.retryMessages.length).toBe(items.results.length);
    await Promise.all(items.results.map((item) => runPublishJob(onTestShard(), item.id).catch(() => null)));

    const states = await eventually(async () => {
      const rows = await env.DB.prepare(
        "SELECT status, reason FROM queue_items WHERE user_id = ? AND action = 'publish'",
      )
        .bind(userId)
        .all<{ status: string; reason: string | null }>();
      return rows.results.every((r) => r.status === "done" || r.status === "error") ? rows.results : undefined;
    }, "every item to finish");
    expect(states).toHaveLength(ADS);
    expect(states.filter((s) => s.status === "error")).toEqual(
      Array.from({ length: REFUSED }, () => ({ status: "error", reason: "rejected by portal" })),
    );

    const publications = await env.DB.prepare(
      "SELECT sum(active) AS active, sum(error) AS error, sum(pending) + sum(processing) AS busy FROM ad_publications p JOIN ads a ON a.id = p.ad_id WHERE a.user_id = ?",
    )
      .bind(userId)
      .first();
    expect(publications).toEqual({ active: ADS - REFUSED, error: REFUSED, busy: 0 });
    const ledger = await env.DB.prepare(
      "SELECT kind, count(*) AS n, count(DISTINCT queue_item_id) AS items FROM wallet_entries WHERE user_id = ? GROUP BY kind ORDER BY kind",
    )
      .bind(userId)
      .all();
    expect(ledger.results).toEqual([
      { kind: "charge", n: ADS, items: ADS },
      { kind: "credit", n: 1, items: 0 },
      { kind: "refund", n: REFUSED, items: REFUSED },
    ]);
    const price = defined(
      (await call("GET", `/ads/?adId=${adIds[0]}`, { key })).body.data[0]?.prices.portal_a[0],
    ).priceTotal;
    expect(await walletBalance(key, userId)).toBe(1_000_000 - (ADS - REFUSED) * price);
  }, 180_000);
});

describe("tenant isolation and random bodies", () => {
  it("answers 404 to another client on every publishing endpoint", async () => {
    const userId = await seller(0);
    const ad = await createAd(key, userId);
    const { key: otherKey } = await newClient({ partner: true });
    const calls: [string, string, unknown?][] = [
      ["GET", `/oauth/${userId}/portal_a/`],
      ["POST", `/oauth/${userId}/portal_a/`],
      ["PUT", `/oauth/${userId}/portal_a/`, { code: "x", state: "y" }],
      ["DELETE", `/oauth/${userId}/portal_a/`],
      ["POST", "/publish/", { userId, adId: ad.adId, portal: "portal_a" }],
      ["PUT", "/publish/", { userId, adId: ad.adId, portal: "portal_a" }],
      ["DELETE", "/publish/", { userId, adId: ad.adId, portal: "portal_a" }],
      ["POST", "/publish/batch", { userId, adId: [ad.adId], portal: "portal_a" }],
      ["PUT", "/publish/batchauto", { userId, portal: "portal_a" }],
      ["GET", `/status/${userId}/${ad.adId}`],
      ["POST", "/status/", { userId, adId: [ad.adId] }],
      ["GET", `/status/totals/${userId}`],
      ["GET", `/features/portal_a/${ad.adId}`],
      ["POST", "/features/", { adId: ad.adId, portal: "portal_a", feature: "url" }],
      ["GET", `/wallet/${userId}`],
      ["GET", `/bids/${userId}`],
      ["POST", "/bids/markasread/", { userId, portal: "portal_a", bidId: [1] }],
      ["POST", "/statistics/", { adId: [ad.adId], dateStart: "2026-01-01", dateEnd: "2026-01-02" }],
    ];
    for (const [method, path, body] of calls) {
      expect((await call(method, path, { key: otherKey, body })).status, `${method} ${path}`).toBe(404);
    }
    expect((await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data.status).toBe(true);
  });

  it("never answer a 5xx to random bodies", async () => {
    const userId = await seller(0);
    const fields = fc.constantFrom(
      "userId",
      "adId",
      "portal",
      "images",
      "feature",
      "force",
      "bidId",
      "dateStart",
      "dateEnd",
      "amount",
      "code",
      "state",
    );
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(
        fields,
        fc.oneof(fc.jsonValue(), fc.constant(userId), fc.constantFrom("portal_a", "website", "meta")),
      ),
    );
    const writes: [string, string][] = [
      ["POST", "/publish/"],
      ["DELETE", "/publish/batch"],
      ["POST", "/publish/batchall"],
      ["PUT", "/publish/batchauto"],
      ["POST", "/status/"],
      ["POST", "/features/"],
      ["POST", "/wallet/"],
      ["POST", "/bids/markasread/"],
      ["POST", "/statistics/"],
      ["PUT", `/oauth/${userId}/portal_b/`],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writes), body, async ([method, path], payload) => {
        const answer = await call(method, path, { key, body: payload });
        expect(answer.status).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
