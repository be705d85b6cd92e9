// The cron's due-task runner, autoreplace, budget notices and housekeeping.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { userTokens } from "../../src/durable/UserTokens";
import { call, eventually, expectEnvelope, twoClients } from "../harness/api";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { connectedSeller, walletBalance } from "../harness/marketplace";

import { type ClientTasks, clientTasks, cronAt } from "../harness/tasks";

let key: string;
let internalKey: string;
let sellerWithAds: ClientTasks["sellerWithAds"];
let task: ClientTasks["task"];
let runs: ClientTasks["runs"];

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  ({ sellerWithAds, task, runs } = clientTasks(key, internalKey));
});

describe("the task runner", () => {
  // 2026-12-01 is a Tuesday; 10:00 in Amsterdam (winter time) is 09:00 UTC.
  const DUE = "2026-12-01T09:00:00.000Z";

  it("runs a task due now once, however often the cron fires in that minute, and records the run", async () => {
    const { userId, adIds } = await sellerWithAds(2);
    const { taskId } = await task(userId, { time: "10:00" });
    await cronAt(DUE);
    await cronAt(DUE);
    await cronAt("2026-12-01T09:00:30.000Z");
    const history = await runs(userId, taskId);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ due: "2026-12-01 10:00:00", ads: 2, queued: 2, skipped: [] });
    expect(history[0]?.cost).toBeGreaterThan(0);
    // The bump-up shows in the ads' feature status once the queue has done it.
    await eventually(async () => {
      const answer = await call("GET", `/status/${userId}/${adIds[0]}`, { key });
      const features = answer.body.data[0]?.portals[0]?.features;
      return Array.isArray(features) && features.some((f) => f.feature === "omhoogplaatsen" && f.active)
        ? true
        : undefined;
    }, "the bump-up to be active");
  });

  it("leaves alone tasks of another minute, another weekday, and disabled ones", async () => {
    const { userId } = await sellerWithAds(1);
    const otherMinute = await task(userId, { time: "10:01" });
    const otherDay = await task(userId, { time: "10:00", dayOfWeek: ["sunday"] });
    const sameDay = await task(userId, { time: "10:00", dayOfWeek: ["tuesday"] });
    const disabled = await task(userId, { time: "10:00", enabled: false });
    await cronAt(DUE);
    expect(await runs(userId, otherMinute.taskId)).toHaveLength(0);
    expect(await runs(userId, otherDay.taskId)).toHaveLength(0);
    expect(await runs(userId, disabled.taskId)).toHaveLength(0);
    expect(await runs(userId, sameDay.taskId)).toHaveLength(1);
  });

  it("catches up when the cron is 5 minutes late, not when it is 20 minutes late", async () => {
    const { userId } = await sellerWithAds(1);
    const late = await task(userId, { time: "11:00" });
    const tooLate = await task(userId, { time: "12:00" });
    await cronAt("2026-12-01T10:05:00.000Z");
    await cronAt("2026-12-01T11:20:00.000Z");
    expect(await runs(userId, late.taskId)).toHaveLength(1);
    expect(await runs(userId, tooLate.taskId)).toHaveLength(0);
  });

  it("follows Amsterdam time over the daylight-saving changes", async () => {
    const { userId } = await sellerWithAds(1);
    // 2027-03-28: clocks go from 02:00 to 03:00. 02:30 does not exist and runs at 03:30 summer time (01:30 UTC).
    const gap = await task(userId, { time: "02:30" });
    const after = await task(userId, { time: "03:15" });
    await cronAt("2027-03-28T00:30:00.000Z");
    expect(await runs(userId, gap.taskId)).toHaveLength(0);
    await cronAt("2027-03-28T01:15:00.000Z");
    expect(await runs(userId, after.taskId)).toHaveLength(1);
    await cronAt("2027-03-28T01:30:00.000Z");
    expect(await runs(userId, gap.taskId)).toHaveLength(1);

    // 2027-10-31: clocks go from 03:00 back to 02:00. 02:30 happens twice and runs once, the first time.
    const twice = await task(userId, { time: "02:30" });
    await cronAt("2027-10-31T00:30:00.000Z");
    await cronAt("2027-10-31T01:30:00.000Z");
    const history = await runs(userId, twice.taskId);
    expect(history.filter((r) => r.due.startsWith("2027-10-31"))).toEqual([
      expect.objectContaining({ due: "2027-10-31 02:30:00" }),
    ]);
  });

  it("targets every active ad published on the portal when no ads are given", async () => {
    const { userId, adIds } = await sellerWithAds(2);
    await createAd(key, userId, { title: "Niet gepubliceerd" });
    await call("PATCH", "/ads/", { key, body: { adId: adIds[1], status: "archive" } });
    const all = await task(userId, { time: "13:00" });
    await cronAt("2026-12-01T12:00:00.000Z");
    expect((await runs(userId, all.taskId))[0]).toMatchObject({ ads: 1, queued: 1 });
  });

  it("records insufficient means as skipped", async () => {
    const { userId, adIds } = await sellerWithAds(1);
    await call("POST", "/wallet/", {
      key: internalKey,
      body: {
        userId,
        amount: -(await call("GET", `/wallet/${userId}`, { key })).body.data.balance,
        description: "leeg",
      },
    });
    const poor = await task(userId, { time: "14:00", adId: adIds });
    await cronAt("2026-12-01T13:00:00.000Z");
    expect((await runs(userId, poor.taskId))[0]).toMatchObject({
      ads: 1,
      queued: 0,
      cost: 0,
      skipped: [{ adId: adIds[0], reason: "insufficient means" }],
    });
  });
});

describe("autoreplace, budget notices and housekeeping", () => {
  it("places a listing again when it reaches its close date, if the ad asks for it", async () => {
    const { userId, adIds } = await sellerWithAds(2);
    const [replaced, kept] = adIds as [number, number];
    await call("POST", "/adsettings/", {
      key,
      body: { adId: replaced, settings: [{ portal: "portal_a", autoreplace: true }] },
    });
    const before = (await call("GET", `/status/${userId}/${replaced}`, { key })).body.data[0]?.portals[0]?.publish;
    await env.DB.prepare("UPDATE ad_publications SET close_date = '2026-01-01T00:00:00.000Z' WHERE ad_id IN (?, ?)")
      .bind(replaced, kept)
      .run();
    await cronAt(new Date().toISOString());
    const after = await eventually(async () => {
      const publish = (await call("GET", `/status/${userId}/${replaced}`, { key })).body.data[0]?.portals[0]?.publish;
      return publish?.active && publish?.remoteAdId !== before?.remoteAdId ? publish : undefined;
    }, "the listing to be placed again");
    expect(after.closeDate > "2026-11").toBe(true);
    const untouched = (await call("GET", `/status/${userId}/${kept}`, { key })).body.data[0]?.portals[0]?.publish;
    expect(untouched?.closeDate).toBe("2026-01-01 01:00:00");
  });

  it("charges a replaced listing to the wallet user the seller's settings name", async () => {
    const payerId = await connectedSeller(key, internalKey, 100_000);
    const userId = await connectedSeller(key, internalKey, 100_000);
    // A brommer: placing one on portal_a costs money.
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer die terugkomt" });
    const price = ad.prices.portal_a[0]?.priceTotal as number;
    expect(price).toBeGreaterThan(0);
    await call("POST", "/adsettings/", {
      key,
      body: { adId: ad.adId, settings: [{ portal: "portal_a", autoreplace: true }] },
    });
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const first = await eventually(async () => {
      const publish = (await call("GET", `/status/${userId}/${ad.adId}`, { key })).body.data[0]?.portals[0]?.publish;
      return publish?.active ? publish : undefined;
    }, "the first placement");
    const settings = await call("POST", "/user/settings/", {
      key: internalKey,
      body: { userId, walletUserId: payerId },
    });
    expect(settings.body.data).toMatchObject({ walletUserId: payerId });
    await env.DB.prepare("UPDATE ad_publications SET close_date = '2026-01-01T00:00:00.000Z' WHERE ad_id = ?")
      .bind(ad.adId)
      .run();
    await cronAt(new Date().toISOString());
    await eventually(async () => {
      const publish = (await call("GET", `/status/${userId}/${ad.adId}`, { key })).body.data[0]?.portals[0]?.publish;
      return publish?.active && publish.remoteAdId !== first.remoteAdId ? publish : undefined;
    }, "the listing to be placed again");
    expect(await walletBalance(key, userId)).toBe(100_000 - price);
    expect(await walletBalance(key, payerId)).toBe(100_000 - price);
  });

  it("writes one budget notice per crossing of the limit, and the cron hands it over", async () => {
    const { userId, adIds } = await sellerWithAds(1, 0);
    await call("PATCH", "/user/settings/", { key, body: { userId, budgetNotifyLimit: 1000 } });
    await call("POST", "/wallet/", { key: internalKey, body: { userId, amount: 1200, description: "storting" } });
    // One purchase at a time: a second call while the first is open would be the same purchase.
    const buy = async () => {
      const answer = await call("POST", "/features/", {
        key,
        body: { adId: adIds[0], portal: "portal_a", feature: "omhoogplaatsen" },
      });
      await eventually(async () => {
        const open = await env.DB.prepare(
          "SELECT count(*) AS n FROM queue_items WHERE ad_id = ? AND status IN ('pending', 'processing')",
        )
          .bind(adIds[0])
          .first<{ n: number }>();
        return open?.n === 0 ? true : undefined;
      }, "the feature job to finish");
      return answer;
    };
    for (let i = 0; i < 3; i += 1) expectEnvelope(await buy(), 200);
    const notices = await env.DB.prepare("SELECT message, sent_at FROM notifications WHERE user_id = ?")
      .bind(userId)
      .all<{ message: string; sent_at: string | null }>();
    expect(notices.results).toHaveLength(1);
    expect(notices.results[0]?.message).toMatch(/below the notification limit of 1000 cents/);
    await cronAt(new Date().toISOString());
    const sent = await env.DB.prepare("SELECT sent_at FROM notifications WHERE user_id = ?")
      .bind(userId)
      .first<{ sent_at: string | null }>();
    expect(sent?.sent_at).not.toBeNull();
    // Back above the limit and down again: a new crossing, a new notice.
    await call("POST", "/wallet/", { key: internalKey, body: { userId, amount: 1000, description: "storting" } });
    for (let i = 0; i < 6; i += 1) await buy();
    const count = await env.DB.prepare("SELECT count(*) AS n FROM notifications WHERE user_id = ?")
      .bind(userId)
      .first<{ n: number }>();
    expect(count?.n).toBe(2);
  });

  it("gives up queue items without progress for a day, and refunds them", async () => {
    const { userId, adIds } = await sellerWithAds(1, 0);
    await env.DB.prepare(
      "INSERT INTO queue_items (ad_id, user_id, portal, action, status, updated_at) VALUES (?, ?, 'portal_b', 'publish', 'pending', '2026-01-01T00:00:00.000Z')",
    )
      .bind(adIds[0], userId)
      .run();
    await cronAt(new Date().toISOString());
    const item = await env.DB.prepare("SELECT status, reason FROM queue_items WHERE ad_id = ? AND portal = 'portal_b'")
      .bind(adIds[0])
      .first();
    expect(item).toEqual({ status: "error", reason: "expired: no progress for 24 hours" });
  });

  it("drops expired login links and activation tokens with the tokens object's alarm", async () => {
    const stub = userTokens(env.USER_TOKENS, 737373);
    const longAgo = Date.now() - 3 * 86_400_000;
    await stub.issue("login", 600_000, longAgo);
    await stub.issue("activation", 600_000, longAgo);
    const stored = () =>
      runInDurableObject(
        stub,
        async (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM tokens").one().n,
      );
    // The alarm was set for a moment already past: it fires at once, or here.
    await runDurableObjectAlarm(stub);
    expect(await eventually(async () => ((await stored()) === 0 ? 0 : undefined), "the alarm to purge")).toBe(0);
    // A fresh token is kept, and its purge is scheduled.
    await stub.issue("login", 600_000, Date.now());
    expect(await stored()).toBe(1);
    expect(await runInDurableObject(stub, async (_instance, state) => state.storage.getAlarm())).toBeGreaterThan(
      Date.now() + 86_000_000,
    );
  });
});
