import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { runFeedFetch } from "../../src/services/feeds";
import { FEED_LIMITS, type FetchLimits } from "../../src/services/feeds/fetching";
import { jobContext } from "../../src/services/shared";
import { call, defined, expectEnvelope, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { clientFeeds, dayLater, dueFeedsAt, FEEDS, feedName, serveFeed } from "../harness/feeds";
import { connectedSeller, listingsAtMarketplace } from "../harness/marketplace";
import { dropping, stepsHeld, stockItem, stockSyncs } from "../harness/syncs";

/**
 * A feed that fails: answers 500, no answer in time, stalls, too large, not parseable, would end too many
 * ads, or points inside: no ad changed, the failure named in GET /feeds/<id> and a feed.failed event; five
 * in a row pause it (feed.paused), and the cron leaves it until it is resumed.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const { feedOf, fetchedFeed, createFeed, eventsOf } = clientFeeds(() => key);
const { settledSync, jobsSettled, sendStock } = stockSyncs(() => key);
const ndjson = (items: unknown[]) => items.map((i) => JSON.stringify(i)).join("\n");
const STOCK = Array.from({ length: 5 }, (_, i) => stockItem(i + 1, { targets: ["portal_a", "website"] }));

/** What the user's ads are: each one's key, content hash and status. */
const adsOf = async (userId: number) =>
  (
    await env.DB.prepare("SELECT external_ad_id AS id, sync_hash AS hash, status FROM ads WHERE user_id = ? ORDER BY 1")
      .bind(userId)
      .all()
  ).results;

/** A user whose feed was fetched once (5 ads, on portal_a and the website), and what it made. */
async function fedUser() {
  const userId = await connectedSeller(key, internalKey, 1_000_000);
  const url = await serveFeed(feedName("good"), ndjson(STOCK));
  const { feedId } = await createFeed({ userId, url });
  await call("POST", `/feeds/${feedId}/run`, { key });
  const feed = await fetchedFeed(feedId);
  await settledSync(defined(feed.lastFetch.syncId));
  await jobsSettled(userId);
  return { userId, feedId, ads: await adsOf(userId), listings: await listingsAtMarketplace(key, userId) };
}

/** Points the feed at `url` (and `format`) and fetches it now; answers the feed once that fetch ended. */
async function fetchFrom(feedId: number, url: string, format = "ndjson") {
  const before = await feedOf(feedId);
  expectEnvelope(await call("PUT", `/feeds/${feedId}`, { key, body: { url, format } }), 200);
  await call("POST", `/feeds/${feedId}/run`, { key });
  return fetchedFeed(feedId, before.lastFetch?.at ?? "");
}

/** Queues a fetch of the feed that no lane runs, and runs it here with `limits` and `bindings`. */
async function fetchHere(feedId: number, limits: Partial<FetchLimits>, bindings: Env = env as unknown as Env) {
  expectEnvelope(await call("POST", `/feeds/${feedId}/run`, { key, env: dropping(["feed"]) }), 200);
  await runFeedFetch(jobContext(onTestShard(bindings)), { feedId, limits: { ...FEED_LIMITS, ...limits } });
  return feedOf(feedId);
}

describe("a feed that fails", () => {
  it("changes no ad, names each failure, pauses after five in a row, and is left by the cron until resumed", async () => {
    const { userId, feedId, ads, listings } = await fedUser();
    const name = feedName("broken");

    const failures: [string, string, RegExp][] = [
      [`${FEEDS}/status/500/${name}`, "ndjson", /^HTTP 500/],
      [
        await serveFeed(`${name}-lines`, `${ndjson(STOCK.slice(0, 2))}\n<html>oops</html>\n`),
        "ndjson",
        /^not parseable: line 3: /,
      ],
      [
        await serveFeed(`${name}-csv`, 'externalAdId,title\n1,"Brommer\n2,x,y\n', { type: "text/csv" }),
        "csv",
        /^not parseable: line \d+: is not CSV/,
      ],
      [
        await serveFeed(`${name}-json`, '{"items": [', { type: "application/json" }),
        "json",
        /^not parseable: body: malformed JSON/,
      ],
    ];
    for (const [at, [url, format, reason]] of failures.entries()) {
      const feed = await fetchFrom(feedId, url, format);
      expect(feed.lastFetch.outcome, url).toBe("failed");
      expect(feed.lastFetch.failure, url).toMatch(reason);
      expect(feed).toMatchObject({ failures: at + 1, paused: false });
    }
    expect((await feedOf(feedId)).lastFetch?.httpStatus).toBe(200);

    // The fifth: a stock of one item would end four of five synced ads (the guard: 20 %).
    const guarded = await fetchFrom(feedId, await serveFeed(`${name}-guard`, ndjson(STOCK.slice(0, 1))));
    expect(guarded.lastFetch.failure).toMatch(/^the guard: /);
    expect(guarded).toMatchObject({ failures: 5, paused: true });
    expect(guarded.pausedReason).toMatch(/^paused after 5 failed fetches in a row; the last: the guard: /);
    const failed = await eventsOf(userId, "feed.failed");
    expect(failed.map((event) => event.data.failures)).toEqual([1, 2, 3, 4, 5]);
    expect(failed.at(-1)?.data).toMatchObject({ feedId, paused: true });
    expect(await eventsOf(userId, "feed.paused")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ feedId, failures: 5 }) }),
    ]);

    // Nothing changed: the ads, and what the marketplace lists.
    expect(await adsOf(userId)).toEqual(ads);
    expect(await listingsAtMarketplace(key, userId)).toEqual(listings);

    // Paused: the cron leaves it; resumed, its failures are forgotten and it is due again.
    await dueFeedsAt(dayLater());
    expect(await feedOf(feedId)).toMatchObject({ queued: false, failures: 5 });
    const resumed = await call("PUT", `/feeds/${feedId}`, { key, body: { paused: false } });
    expect(resumed.body.data).toMatchObject({ paused: false, pausedReason: null, failures: 0 });
  });

  it("names a fetch with no answer in time, a body that stops, one too large, and an address inside", async () => {
    const { userId, feedId, ads } = await fedUser();
    const name = feedName("slow");
    await call("PUT", `/feeds/${feedId}`, { key, body: { url: `${FEEDS}/hang/${name}` } });
    expect((await fetchHere(feedId, { answerMs: 300 })).lastFetch).toMatchObject({
      outcome: "failed",
      httpStatus: null,
      failure: "timeout: no answer within 0.3 s",
    });
    await call("PUT", `/feeds/${feedId}`, { key, body: { url: `${FEEDS}/stall/${name}` } });
    expect((await fetchHere(feedId, { stallSeconds: 1 })).lastFetch?.failure).toBe(
      "timeout: body: nothing arrived for 1 s",
    );
    await call("PUT", `/feeds/${feedId}`, { key, body: { url: await serveFeed(`${name}-big`, ndjson(STOCK)) } });
    expect((await fetchHere(feedId, { maxBytes: 100 })).lastFetch?.failure).toBe(
      "too large: body: the feed is larger than 100 bytes",
    );
    await call("PUT", `/feeds/${feedId}`, { key, body: { url: "http://127.0.0.1:8787/stock.ndjson" } });
    const production = { ...(env as unknown as Env), ENVIRONMENT: "production" };
    expect((await fetchHere(feedId, {}, production)).lastFetch?.failure).toMatch(/^refused: .*not allowed/);
    expect(await adsOf(userId)).toEqual(ads);
    expect((await eventsOf(userId, "feed.failed")).map((event) => event.data.reason)).toHaveLength(4);

    // Another sync of the user under way (its steps held here): the fetch is told so, and not counted.
    const held = await sendStock(userId, STOCK, { env: stepsHeld() });
    expectEnvelope(held, 200);
    await call("PUT", `/feeds/${feedId}`, { key, body: { url: await serveFeed(`${name}-busy`, ndjson(STOCK)) } });
    const busy = await fetchHere(feedId, {});
    expect(busy.lastFetch?.failure).toBe(
      `not applied: userId: sync ${held.body.data.syncId} of user ${userId} is still under way; wait for it (GET /syncs/${held.body.data.syncId})`,
    );
    expect(busy.failures).toBe(4);
  });
});
