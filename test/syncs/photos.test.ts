import { beforeAll, describe, expect, it } from "vitest";
import { CHUNK_ITEMS } from "../../src/services/syncs/stockStore";
import { marketplace } from "../fixtures/marketplace";
import { call, expectEnvelope, twoClients } from "../harness/api";
import { createAd, PAID_CATEGORY, requiredAttributes } from "../harness/data";
import { IMAGE_ORIGIN, sellerImages, source } from "../harness/images";
import { connectedSeller, listingsAtMarketplace } from "../harness/marketplace";
import { stockItem, stockSyncs } from "../harness/syncs";

/**
 * An item goes out whole: a sync's placement waits for the item's photos and sends the ad with them,
 * once. Counted at the marketplace simulator (every placement and update it accepted), not in our rows.
 */

let key: string;
let internalKey: string;

const syncs = stockSyncs(() => key);

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const PHOTOS = ["red.png", "green.png", "blue.jpg"];
/** A stock of two sync steps (CHUNK_ITEMS each), so placements of both wait for their photos. */
const ITEMS = CHUNK_ITEMS + 10;
const CHANGED = ITEMS / 10;

const item = (externalAdId: number, price = 100_000) =>
  stockItem(externalAdId, {
    title: `Auto ${externalAdId}`,
    price: { model: "fixed", price },
    // Each item's own URLs (the fixture origin serves a file whatever its query).
    images: PHOTOS.map((name) => `${IMAGE_ORIGIN}/${name}?item=${externalAdId}`),
  });

describe("an item goes out whole", () => {
  it(`${ITEMS} items with 3 photos each: ${ITEMS} placements, each with its 3 photos, and no update; then 10% of the prices changed: one update per changed listing`, async () => {
    const userId = await connectedSeller(key, internalKey, 100_000_000);
    const account = (await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data.externalUserId as number;
    const stock = Array.from({ length: ITEMS }, (_, i) => item(i + 1));

    const first = await syncs.settledSync((await syncs.sendStock(userId, stock)).body.data.syncId);
    expect(first).toMatchObject({ state: "finished", created: ITEMS, refused: 0 });
    await syncs.jobsSettled(userId);
    const summary = await marketplace("portal_a").summary(account);
    console.log(`${ITEMS} items with 3 photos each: ${summary.creates} placements, ${summary.updates} updates`);
    expect(summary).toMatchObject({ listings: ITEMS, online: ITEMS, duplicateRefs: 0, creates: ITEMS, updates: 0 });
    const held = await listingsAtMarketplace(key, userId);
    expect(held.filter((listing) => listing.listing?.images.length !== PHOTOS.length)).toEqual([]);

    // Tonight's stock: a tenth of the prices changed, the photos as they were.
    const tonight = stock.map((it) => (it.externalAdId % 10 === 0 ? item(it.externalAdId, 90_000) : it));
    const nightly = await syncs.settledSync((await syncs.sendStock(userId, tonight)).body.data.syncId);
    expect(nightly).toMatchObject({ state: "finished", updated: CHANGED, unchanged: ITEMS - CHANGED });
    await syncs.jobsSettled(userId);
    expect(await marketplace("portal_a").summary(account)).toMatchObject({ creates: ITEMS, updates: CHANGED });
    const repriced = (await listingsAtMarketplace(key, userId)).filter((l) => l.listing?.price.price === 90_000);
    expect(repriced).toHaveLength(CHANGED);
    expect(repriced.filter((listing) => listing.listing?.images.length !== PHOTOS.length)).toEqual([]);
  }, 900_000);

  it("photos added to a live listing: one update, sent once the last of them is stored, with all of them", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000_000);
    const account = (await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data.externalUserId as number;
    const ad = await createAd(key, userId, {
      categoryId: PAID_CATEGORY,
      attributes: requiredAttributes(PAID_CATEGORY),
    });
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    await syncs.jobsSettled(userId);
    const answer = await call("PUT", `/images/${ad.adId}`, {
      key,
      body: { images: PHOTOS.map((name) => source(`${name}?ad=${ad.adId}`)) },
    });
    expectEnvelope(answer, 200);
    await sellerImages(key, userId).settled(ad.adId);
    await syncs.jobsSettled(userId);
    expect(await marketplace("portal_a").summary(account)).toMatchObject({ creates: 1, updates: 1 });
    const [listing] = await listingsAtMarketplace(key, userId);
    expect(listing?.listing?.images).toHaveLength(PHOTOS.length);
  });
});
