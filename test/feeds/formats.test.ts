import { env } from "cloudflare:test";
import { stringify } from "csv-stringify/sync";
import { beforeAll, describe, expect, it } from "vitest";
import { CHUNK_ITEMS } from "../../src/services/syncs/stockStore";
import { call, defined, twoClients } from "../harness/api";
import { clientFeeds, dayLater, dueFeedsAt, feedName, feedRequests, serveFeed } from "../harness/feeds";
import { connectedSeller, listingsAtMarketplace, walletBalance } from "../harness/marketplace";
import { stockItem, stockSyncs } from "../harness/syncs";

/**
 * A stock of three sync steps served as NDJSON, JSON and CSV and fetched by the cron makes the same ads and
 * the same charges as the same stock sent to POST /syncs/; fetched again unchanged, each costs one request
 * and starts no sync (a 304, or the same bytes from a server without validators).
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const { fetchedFeed, createFeed } = clientFeeds(() => key);
const { sendStock, settledSync, jobsSettled, totalOf } = stockSyncs(() => key);

/** The stock: three sync steps' items, a tenth of them paid placements on portal_a, the rest on the website (free). */
const ITEMS = 2 * CHUNK_ITEMS + 20;
const PAID = ITEMS / 10;
const STOCK = Array.from({ length: ITEMS }, (_, i) =>
  stockItem(i + 1, {
    title: `Brommer ${i + 1}, "als nieuw"`,
    description: `Een nette brommer, weinig gereden.\nOnderhouden; prijs ${i + 1},- "vast".`,
    price: { model: "fixed", price: 100_000 + i },
    targets: i < PAID ? ["portal_a"] : ["website"],
  }),
);

/** An item's fields by dotted names (`price.model`, `attributes.0.values.1.key`), as a CSV feed names its columns. */
function dotted(value: unknown, path = "", into: Record<string, unknown> = {}): Record<string, unknown> {
  if (value !== null && typeof value === "object")
    for (const [key, entry] of Object.entries(value)) dotted(entry, path ? `${path}.${key}` : key, into);
  else into[path] = value;
  return into;
}

const AS = {
  ndjson: () => STOCK.map((item) => JSON.stringify(item)).join("\n"),
  json: () => JSON.stringify({ items: STOCK }),
  csv: () => {
    const rows = STOCK.map((item) => dotted(item));
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    return stringify(rows, { header: true, columns });
  },
};
const TYPES = { ndjson: "application/x-ndjson", json: "application/json", csv: "text/csv" };

/** Each ad of the user by its externalAdId, as the stock's item it was made from (its hash), its status. */
const adsOf = async (userId: number) =>
  (
    await env.DB.prepare("SELECT external_ad_id AS id, sync_hash AS hash, status FROM ads WHERE user_id = ? ORDER BY 1")
      .bind(userId)
      .all<{ id: number; hash: string; status: string }>()
  ).results.map(({ id, hash, status }) => `${id} ${hash} ${status}`);

describe("a feed's formats", () => {
  it("make the same ads and charges as POST /syncs/, and an unchanged fetch costs one request and no sync", async () => {
    const credit = 10_000_000;
    const sent = await connectedSeller(key, internalKey, credit);
    const syncId = (await sendStock(sent, STOCK)).body.data.syncId;
    const formats = ["ndjson", "json", "csv"] as const;
    const fed = await Promise.all(
      formats.map(async (format) => {
        const userId = await connectedSeller(key, internalKey, credit);
        const name = feedName(format);
        // The JSON feed's server sends no validators: an unchanged fetch is told by its bytes.
        const url = await serveFeed(name, AS[format](), { type: TYPES[format], conditional: format !== "json" });
        const { feedId } = await createFeed({ userId, url, format, maxEndedPercent: 100 });
        return { format, userId, name, feedId };
      }),
    );
    expect(await dueFeedsAt(dayLater())).toBeGreaterThanOrEqual(3);

    expect(await settledSync(syncId)).toMatchObject({ state: "finished", created: ITEMS, refused: 0 });
    await jobsSettled(sent);
    const expected = {
      ads: await adsOf(sent),
      charged: credit - (await walletBalance(key, sent)),
      listings: (await listingsAtMarketplace(key, sent)).length,
    };
    expect(expected.ads).toHaveLength(ITEMS);
    expect(expected.listings).toBe(PAID);
    expect(expected.charged).toBeGreaterThan(0);
    for (const { format, userId, feedId } of fed) {
      const feed = await fetchedFeed(feedId);
      expect(feed.lastFetch, format).toMatchObject({
        outcome: "fetched",
        httpStatus: 200,
        items: ITEMS,
        failure: null,
      });
      expect(await settledSync(defined(feed.lastFetch.syncId)), format).toMatchObject({
        state: "finished",
        created: ITEMS,
        refused: 0,
      });
      await jobsSettled(userId);
      expect(await adsOf(userId), format).toEqual(expected.ads);
      expect(credit - (await walletBalance(key, userId)), format).toBe(expected.charged);
      expect((await listingsAtMarketplace(key, userId)).length, format).toBe(expected.listings);
    }

    // Fetched again, unchanged: one request each (a 304, or the same bytes), and no sync.
    for (const { format, userId, name, feedId } of fed) {
      const before = await fetchedFeed(feedId);
      const syncs = await totalOf(`/syncs/?userId=${userId}`);
      await call("POST", `/feeds/${feedId}/run`, { key });
      const again = await fetchedFeed(feedId, before.lastFetch.at);
      expect(again.lastFetch, format).toMatchObject({
        outcome: "unchanged",
        httpStatus: format === "json" ? 200 : 304,
        syncId: null,
      });
      expect((await feedRequests(name)).length, format).toBe(2);
      expect(await totalOf(`/syncs/?userId=${userId}`), format).toBe(syncs);
    }
  }, 900_000);
});
