import { beforeAll, describe, expect, it } from "vitest";
import { runFeedFetch } from "../../src/services/feeds";
import { jobContext } from "../../src/services/shared";
import { failSync } from "../../src/services/syncs";
import { call, defined, expectEnvelope, expectError, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { clientFeeds, dayLater, dueFeedsAt, feedName, feedRequests, serveFeed } from "../harness/feeds";
import { connectedSeller } from "../harness/marketplace";
import { dropping, stockItem, stockSyncs } from "../harness/syncs";

/**
 * A dealer's feed: registered, fetched by the cron in the client's lanes, applied as a sync when it
 * changed and free when it did not (a 304, or the same bytes), followed at GET /feeds/<id>.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const { feedOf, fetchedFeed, createFeed, eventsOf } = clientFeeds(() => key);
const { syncOf, totalOf } = stockSyncs(() => key);
const ndjson = (items: unknown[]) => items.map((i) => JSON.stringify(i)).join("\n");

describe("a feed", () => {
  it("is fetched when due, applied as a sync, and costs one request and no sync when unchanged", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const name = feedName("basic");
    const url = await serveFeed(name, ndjson([stockItem(1), stockItem(2, { targets: ["website"] })]));
    const { feedId } = await createFeed({ userId, url, schedule: { every: "daily", hour: 6, minute: 30 } });

    expect(await dueFeedsAt(new Date())).toBe(0);
    expect(await dueFeedsAt(dayLater())).toBeGreaterThanOrEqual(1);
    const fetched = await fetchedFeed(feedId);
    expect(fetched.lastFetch).toMatchObject({ outcome: "fetched", httpStatus: 200, items: 2, failure: null });
    const sync = await syncOf(defined(fetched.lastFetch.syncId));
    expect(sync).toMatchObject({ userId, items: 2 });
    expect(await eventsOf(userId, "feed.fetched")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ feedId, syncId: sync.syncId, items: 2 }) }),
    ]);

    // Unchanged: the next fetch asks conditionally; the 304 starts no sync.
    const syncsBefore = await totalOf(`/syncs/?userId=${userId}`);
    await call("POST", `/feeds/${feedId}/run`, { key });
    const unchanged = await fetchedFeed(feedId, fetched.lastFetch.at);
    expect(unchanged.lastFetch).toMatchObject({ outcome: "unchanged", httpStatus: 304, syncId: null });
    const requests = await feedRequests(name);
    expect(requests.map((r) => r.status)).toEqual([200, 304]);
    expect(requests[1]?.headers["if-none-match"]).toBeTruthy();
    expect(await totalOf(`/syncs/?userId=${userId}`)).toBe(syncsBefore);
    expect(await eventsOf(userId, "feed.unchanged")).toHaveLength(1);
  });

  it("sends its secret header, and what GET answers can be sent back (the secret kept)", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const name = feedName("secret");
    const url = await serveFeed(name, ndjson([stockItem(1, { targets: ["website"] })]), {
      secret: "X-Feed-Key: s3cret",
    });
    const { feedId } = await createFeed({ userId, url, header: { name: "X-Feed-Key", value: "s3cret" } });
    const read = await feedOf(feedId);
    expect(read.header).toEqual({ name: "X-Feed-Key" });
    expect(JSON.stringify(read)).not.toContain("s3cret");

    const sentBack = await call("PUT", `/feeds/${feedId}`, {
      key,
      body: { ...read, schedule: { every: "hourly", minute: 15 } },
    });
    expectEnvelope(sentBack, 200);
    expect(sentBack.body.data).toMatchObject({
      header: { name: "X-Feed-Key" },
      schedule: { every: "hourly", minute: 15 },
    });
    await call("POST", `/feeds/${feedId}/run`, { key });
    expect((await fetchedFeed(feedId)).lastFetch).toMatchObject({ outcome: "fetched", httpStatus: 200, items: 1 });
    expect((await feedRequests(name))[0]?.headers["x-feed-key"]).toBe("s3cret");

    // Without it, the server refuses: the failure says so.
    await call("PUT", `/feeds/${feedId}`, { key, body: { header: null, format: "ndjson" } });
    const before = await feedOf(feedId);
    await call("POST", `/feeds/${feedId}/run`, { key });
    expect((await fetchedFeed(feedId, before.lastFetch?.at)).lastFetch).toMatchObject({
      outcome: "failed",
      httpStatus: 401,
      failure: "HTTP 401: the feed answered 401",
    });
  });

  it("refuses what is not a feed, naming the field, and is another client's to see only when it is its own", async () => {
    const userId = await connectedSeller(key, internalKey);
    const refused = [
      [
        { userId, url: "ftp://dealer.example/stock", format: "ndjson", schedule: { every: "hourly", minute: 0 } },
        "url",
      ],
      [
        { userId, url: "https://dealer.example/stock", format: "xml", schedule: { every: "hourly", minute: 0 } },
        "format",
      ],
      [
        { userId, url: "https://dealer.example/stock", format: "csv", schedule: { every: "daily", minute: 0 } },
        "schedule.hour",
      ],
      [
        { userId, url: "https://dealer.example/stock", format: "csv", schedule: { every: "hourly", minute: 60 } },
        "schedule.minute",
      ],
      [
        {
          userId,
          url: "https://dealer.example/stock",
          format: "csv",
          schedule: { every: "hourly", minute: 0 },
          header: { name: "X Key", value: "v" },
        },
        "header.name",
      ],
      [
        {
          userId,
          url: "https://dealer.example/stock",
          format: "csv",
          schedule: { every: "hourly", minute: 0 },
          header: { name: "X-Key" },
        },
        "header.value",
      ],
    ] as const;
    for (const [body, field] of refused) {
      const answer = await call("POST", "/feeds/", { key, body });
      expectEnvelope(answer, 400);
      expect(
        answer.body.errorDetails?.map((d) => d.field),
        JSON.stringify(body),
      ).toContain(field);
    }

    const { feedId } = await createFeed({ userId, url: "https://dealer.example/stock.csv", format: "csv" });
    const { key: otherKey } = await twoClients();
    for (const [method, path] of [
      ["GET", `/feeds/${feedId}`],
      ["PUT", `/feeds/${feedId}`],
      ["POST", `/feeds/${feedId}/run`],
      ["DELETE", `/feeds/${feedId}`],
    ] as const)
      expectError(
        await call(method, path, { key: otherKey, ...(method === "PUT" ? { body: { paused: true } } : {}) }),
        "feed_not_found",
      );
    expectError(await call("GET", `/feeds/?userId=${userId}`, { key: otherKey }), "user_not_found");

    const listed = await call("GET", `/feeds/?userId=${userId}`, { key });
    expect(listed.body.data.map((feed: { feedId: number }) => feed.feedId)).toEqual([feedId]);
    expectEnvelope(await call("DELETE", `/feeds/${feedId}`, { key }), 200);
    expectError(await call("GET", `/feeds/${feedId}`, { key }), "feed_not_found");
  });

  it("previews a URL as the sync's dry run, changing nothing, and names a URL it cannot read", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const url = await serveFeed(feedName("preview"), ndjson([stockItem(1), stockItem(2), { externalAdId: 3 }]));
    const preview = await call("POST", "/feeds/preview", { key, body: { userId, url, format: "ndjson" } });
    expectEnvelope(preview, 200);
    expect(preview.body.data).toMatchObject({ userId, items: 3, created: 2, refused: 1, ended: 0 });
    expect(preview.body.data.targets.portal_a.place).toBe(2);
    expect(preview.body.data.cost).toBeGreaterThan(0);
    expect(await totalOf(`/syncs/?userId=${userId}`)).toBe(0);

    const unreadable = await call("POST", "/feeds/preview", {
      key,
      body: { userId, url: "http://feeds.test/status/503/preview", format: "ndjson" },
    });
    expect(expectError(unreadable, "feed_unreadable")[0]?.message).toBe("url: HTTP 503: the feed answered 503");
  });

  it("applies the same bytes again when the sync they started failed", async () => {
    const userId = await connectedSeller(key, internalKey);
    const name = feedName("again");
    const url = await serveFeed(name, ndjson([stockItem(1, { targets: ["website"] })]));
    const { feedId } = await createFeed({ userId, url });
    // A fetch whose sync's steps are lost: the sync then fails (its step given up).
    expectEnvelope(await call("POST", `/feeds/${feedId}/run`, { key, env: dropping(["feed"]) }), 200);
    await runFeedFetch(jobContext(onTestShard(dropping(["sync"]))), { feedId });
    const first = defined((await feedOf(feedId)).lastFetch);
    const syncId = defined(first.syncId);
    await failSync(jobContext(onTestShard()), { syncId, reason: "a step failed after repeated attempts" });
    expect(await syncOf(syncId)).toMatchObject({ state: "failed" });

    await call("POST", `/feeds/${feedId}/run`, { key });
    const again = await fetchedFeed(feedId, first.at);
    expect(again.lastFetch).toMatchObject({ outcome: "fetched", httpStatus: 200, items: 1 });
    expect(again.lastFetch.syncId).not.toBe(syncId);
    const requests = await feedRequests(name);
    expect(requests.map((request) => request.status)).toEqual([200, 200]);
    expect(requests[1]?.headers["if-none-match"]).toBeUndefined();
  });
});
