// The dry run of publishing (POST /publish/preflight/): what each ad would come to, with nothing changed.
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { queueJobs } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, expectEnvelope, expectError, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { activate, CAR_ATTRIBUTES, CAR_CATEGORY, createAd, createUser, PAID_CATEGORY } from "../harness/data";
import { placements, withoutMessages } from "../harness/jobs";
import { connectedSeller, settledPublication, walletBalance } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

/** Rows a dry run must not write, and what the user's marketplace account holds. */
async function footprint(userId: number) {
  const count = async (table: string, where = "") =>
    (await env.DB.prepare(`SELECT count(*) AS n FROM ${table} ${where}`).first<{ n: number }>())?.n;
  const connection = await call("GET", `/oauth/${userId}/portal_a/`, { key });
  const account = connection.body.data.externalUserId as number | null;
  return {
    jobs: await count("queue_items"),
    ledger: await count("wallet_entries"),
    events: await count("events"),
    idempotencyKeys: await count("idempotency_keys"),
    publications: await count("ad_publications"),
    marketplace: account ? await marketplace("portal_a").summary(account) : null,
  };
}

const preflight = (body: Record<string, unknown>, options: { key?: string; headers?: Record<string, string> } = {}) =>
  call("POST", "/publish/preflight/", { key: options.key ?? key, body, headers: options.headers });

describe("a dry run of publishing", () => {
  it("says what each ad would come to, with the price and the wallet after, and changes nothing", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const good = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer zonder zorgen" });
    const rejected = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer [reject] model" });
    // Bidding on a car: our checks let it pass, the marketplace's own rules do not.
    const bidding = await createAd(key, userId, {
      categoryId: CAR_CATEGORY,
      title: "Auto op bieding",
      attributes: CAR_ATTRIBUTES,
      price: { model: "bidding", price: 900_000, minimumBid: 800_000 },
    });
    const archived = await createAd(key, userId, { categoryId: PAID_CATEGORY, status: "archive" });
    const before = await footprint(userId);

    const answer = await preflight(
      { userId, adId: [good.adId, rejected.adId, bidding.adId, archived.adId], portal: "portal_a" },
      { headers: { "Idempotency-Key": `preflight-${userId}` } },
    );
    expectEnvelope(answer, 200);
    const { wallet, verdicts } = answer.body.data;
    const byAd = new Map(verdicts.map((v) => [v.adId, v]));
    const placed = defined(byAd.get(good.adId));
    expect(placed).toMatchObject({
      portal: "portal_a",
      outcome: "placement",
      verifiedByMarketplace: true,
      connection: { state: "connected" },
      errors: [],
    });
    expect(placed.price).toBeGreaterThan(0);
    expect(byAd.get(rejected.adId)).toMatchObject({
      outcome: "refused",
      price: 0,
      verifiedByMarketplace: true,
      errors: [`portal: portal_a - adId: ${rejected.adId} - rejected by portal`],
      errorDetails: [{ code: "listing_refused" }],
    });
    expect(byAd.get(bidding.adId)).toMatchObject({
      outcome: "refused",
      errorDetails: [{ code: "listing_refused", field: "price.model" }],
    });
    expect(byAd.get(archived.adId)).toMatchObject({
      outcome: "refused",
      verifiedByMarketplace: false,
      errorDetails: [{ code: "ad_archived", field: "adId" }],
    });
    // What the marketplace refuses is refunded by a real call: only the placement stays charged.
    expect(wallet).toEqual({
      payer: "visible",
      payerId: userId,
      balance: 1_000_000,
      charged: placed.price,
      balanceAfter: 1_000_000 - placed.price,
    });
    // No job, charge, event, publication, idempotency record or listing.
    expect(await footprint(userId)).toEqual(before);
    expect(await walletBalance(key, userId)).toBe(1_000_000);
  });

  it("names a payer of another client only as another payer: no id, no balance, only what it would charge", async () => {
    const userId = await connectedSeller(key, internalKey, 0);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    // The platform makes a user of its own client pay for the partner's seller.
    const payer = await createUser(internalKey);
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: payer.userId, amount: 50_000, description: "x" },
    });
    expectEnvelope(
      await call("POST", "/user/settings/", { key: internalKey, body: { userId, walletUserId: payer.userId } }),
      200,
    );
    const dryRun = (asKey: string) =>
      call("POST", "/publish/preflight/", { key: asKey, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const partner = expectEnvelope(await dryRun(key), 200).data.wallet;
    expect(partner).toEqual({
      payer: "another payer",
      payerId: 0,
      balance: 0,
      charged: partner.charged,
      balanceAfter: 0,
    });
    expect(partner.charged).toBeGreaterThan(0);
    const internal = expectEnvelope(await dryRun(internalKey), 200).data.wallet;
    expect(internal).toEqual({
      payer: "visible",
      payerId: payer.userId,
      balance: 50_000,
      charged: partner.charged,
      balanceAfter: 50_000 - partner.charged,
    });
  });

  it("refuses what the wallet cannot pay in the order given, as the real call does, with the amounts", async () => {
    const userId = await connectedSeller(key, internalKey, 400);
    const first = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Eerste brommer" });
    const second = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Tweede brommer" });
    const { data } = (await preflight({ userId, adId: [first.adId, second.adId], portal: "portal_a" })).body;
    const [paid, unpaid] = data.verdicts;
    expect(paid).toMatchObject({ outcome: "placement" });
    expect(unpaid).toMatchObject({
      outcome: "refused",
      price: 0,
      errorDetails: [
        { code: "insufficient_means", amounts: { price: defined(paid).price, balance: 400 - defined(paid).price } },
      ],
    });
    expect(data.wallet.balanceAfter).toBe(400 - defined(paid).price);
  });

  it("names the connection's state, and where to consent when there is none", async () => {
    const user = await createUser(key, { companyName: null });
    await activate(key, user);
    const ad = await createAd(key, user.userId, { categoryId: PAID_CATEGORY });
    const { data } = (await preflight({ userId: user.userId, adId: ad.adId, portal: "portal_a" })).body;
    expect(data.verdicts).toEqual([
      expect.objectContaining({
        outcome: "refused",
        verifiedByMarketplace: false,
        connection: { state: "missing", consentUrl: `http://api.test/rest/v1/oauth/${user.userId}/portal_a/` },
        errorDetails: [expect.objectContaining({ code: "portal_not_connected", field: "portal" })],
      }),
    ]);
    // A locked user is refused before the connection is looked at; the website needs none.
    const locked = await createUser(key);
    const lockedAd = await createAd(key, locked.userId);
    const website = (await preflight({ userId: locked.userId, adId: lockedAd.adId, portal: "website" })).body.data;
    expect(website.verdicts).toEqual([
      expect.objectContaining({
        connection: { state: "not_needed" },
        errorDetails: [expect.objectContaining({ code: "user_locked", field: "userId" })],
      }),
    ]);
  });

  it("renews an access token the marketplace ended, as a job would, and still asks it", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer na het verlopen" });
    await marketplace("portal_a").expireTokens();
    const { data } = (await preflight({ userId, adId: ad.adId, portal: "portal_a" })).body;
    expect(data.verdicts[0]).toMatchObject({ outcome: "placement", verifiedByMarketplace: true });
  });

  it("answers unverified, with the reason, while the marketplace is down, never a guess", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer tijdens storing" });
    const before = await footprint(userId);
    await marketplace("portal_a").outage(true);
    try {
      const { data } = (await preflight({ userId, adId: ad.adId, portal: "portal_a" })).body;
      expect(data.verdicts[0]).toMatchObject({
        outcome: "unverified",
        verifiedByMarketplace: false,
        reason: "service unavailable",
        errors: [],
      });
    } finally {
      await marketplace("portal_a").outage(false);
    }
    expect(await footprint(userId)).toEqual(before);
  });

  it("covers every target with meta (internal clients only), and at most 100 ads", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer overal" });
    expectError(await preflight({ userId, adId: ad.adId, portal: "meta" }), "internal_only");
    const all = (await preflight({ userId, adId: ad.adId, portal: "meta" }, { key: internalKey })).body.data;
    expect(all.verdicts.map((v) => [v.portal, v.outcome])).toEqual([
      ["portal_a", "placement"],
      ["portal_b", "refused"],
      ["website", "placement"],
    ]);
    const tooMany = await preflight({ userId, adId: Array.from({ length: 101 }, (_, i) => i + 1), portal: "portal_a" });
    expectError(tooMany, "validation_failed");
    expect(tooMany.body.errors[0]).toMatch(/^adId/);
  });

  it("says queued for an ad whose job is open, and update, free, for a live one", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer in de rij" });
    // A placement written and held (no message sent): the real call would return that job.
    await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, [ad.adId]));
    const [open] = (await preflight({ userId, adId: ad.adId, portal: "portal_a" })).body.data.verdicts;
    expect(open).toMatchObject({ outcome: "queued", price: 0, verifiedByMarketplace: false });

    const live = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer al online" });
    await call("POST", "/publish/", { key, body: { userId, adId: live.adId, portal: "website" } });
    expect((await settledPublication(key, userId, live.adId, "website"))?.active).toBe(true);
    const [update] = (await preflight({ userId, adId: live.adId, portal: "website" })).body.data.verdicts;
    expect(update).toMatchObject({ outcome: "update", price: 0 });
  });
});
