import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, twoClients } from "../harness/api";
import { activate, createAd, createUser, GPSR_VALUES, PAID_CATEGORY } from "../harness/data";
import {
  connectedSeller,
  connectPortal,
  publicationOf,
  settledPublication,
  walletBalance,
} from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const seller = (credit = 10_000, overrides: Record<string, unknown> = {}) =>
  connectedSeller(key, internalKey, credit, overrides);

describe("portal connection", () => {
  it("connects through the redirect, shows masked tokens, and disconnects", async () => {
    const user = await createUser(key);
    const before = await call("GET", `/oauth/${user.userId}/portal_a/`, { key });
    expect(before.body.data).toMatchObject({ status: false, accessToken: "", scope: [] });
    const connection = await connectPortal(key, user.userId, "portal_a");
    expect(connection).toMatchObject({
      userId: user.userId,
      portal: "portal_a",
      status: true,
      accessToken: "********",
      refreshToken: "********",
    });
    expect(connection.externalUserId).toBeGreaterThan(0);
    expect(connection.scope).toContain("listings");
    const stored = await env.DB.prepare("SELECT access_token FROM portal_connections WHERE user_id = ?")
      .bind(user.userId)
      .first<{ access_token: string }>();
    expect(stored?.access_token).toMatch(/^v2\.[0-9a-f]{8}\./);

    // Starting again revokes the access token; the refresh token stays until another connection is made.
    const restarted = await call("POST", `/oauth/${user.userId}/portal_a/`, { key });
    expect(restarted.body.data.redirect).toMatch(/^http:\/\/api\.test\/simulator\/portal_a\/oauth\/authorize\?/);
    expect((await call("GET", `/oauth/${user.userId}/portal_a/`, { key })).body.data).toMatchObject({
      status: true,
      accessToken: "",
      refreshToken: "********",
    });
    await connectPortal(key, user.userId, "portal_a");

    const gone = await call("DELETE", `/oauth/${user.userId}/portal_a/`, { key });
    expectEnvelope(gone, 200);
    expect(gone.body.data).toMatchObject({ status: false, accessToken: "", refreshToken: "", scope: [] });
  });

  it("refuses a wrong state or code", async () => {
    const user = await createUser(key);
    const started = await call("POST", `/oauth/${user.userId}/portal_b/`, { key });
    const wrongState = await call("PUT", `/oauth/${user.userId}/portal_b/`, {
      key,
      body: { code: "x", state: "not-the-state" },
    });
    expectError(wrongState, "oauth_state_mismatch");
    expect(wrongState.body.errors).toEqual(["state: does not match the authorization"]);
    const state = new URL(started.body.data.redirect).searchParams.get("state");
    const wrongCode = await call("PUT", `/oauth/${user.userId}/portal_b/`, { key, body: { code: "made-up", state } });
    expectError(wrongCode, "oauth_code_refused");
    expect(wrongCode.body.errors).toEqual(["code: refused by the portal"]);
  });
});

describe("publishing", () => {
  it("queues, publishes through the simulator, charges once and shows the status", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer Vespa" });
    const cost = defined(ad.prices.portal_a[0]).priceTotal;
    expect(cost).toBeGreaterThan(0);
    const queued = await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expectEnvelope(queued, 200);
    expect(queued.body.data).toEqual([]);
    expect(await walletBalance(key, userId)).toBe(10_000 - cost);

    const publish = await settledPublication(key, userId, ad.adId);
    expect(publish).toMatchObject({ active: true, online: true, error: false, clientResult: true, queueResult: true });
    expect(publish.remoteAdId).toBeGreaterThan(0);
    expect(publish.closeDate).not.toBe("0000-00-00 00:00:00");

    // Publishing again updates, free of charge.
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    await settledPublication(key, userId, ad.adId);
    expect(await walletBalance(key, userId)).toBe(10_000 - cost);

    const listed = await call("GET", `/ads/?adId=${ad.adId}`, { key });
    expect(listed.body.data[0]?.portals[0]?.publish.remoteAdId).toBe(publish.remoteAdId);

    expectEnvelope(
      await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }),
      200,
    );
    const after = await settledPublication(key, userId, ad.adId);
    expect(after).toMatchObject({ active: false, online: false });
  });

  it("publishes to the website without a connection", async () => {
    const user = await createUser(key, { externalUserId: 3 });
    await activate(key, user);
    const ad = await createAd(key, user.userId);
    expectEnvelope(
      await call("POST", "/publish/", { key, body: { userId: user.userId, adId: ad.adId, portal: "website" } }),
      200,
    );
    const publish = await settledPublication(key, user.userId, ad.adId, "website");
    expect(publish).toMatchObject({ active: true, online: true, remoteAdId: ad.adId });
    expect(publish).not.toHaveProperty("clientResult");
  });

  it("refuses with the spec's text form before queueing", async () => {
    const locked = await createUser(key, { externalUserId: 5 });
    const lockedAd = await createAd(key, locked.userId);
    const lockedAnswer = await call("POST", "/publish/", {
      key,
      body: { userId: locked.userId, adId: lockedAd.adId, portal: "website" },
    });
    expectError(lockedAnswer, "user_locked");
    expect(lockedAnswer.body.errors).toEqual([`portal: website - adId: ${lockedAd.adId} - user is locked`]);

    const unconnected = await createUser(key, { externalUserId: 6 });
    await activate(key, unconnected);
    const unconnectedAd = await createAd(key, unconnected.userId);
    const notConnected = await call("POST", "/publish/", {
      key,
      body: { userId: unconnected.userId, adId: unconnectedAd.adId, portal: "portal_b" },
    });
    expectError(notConnected, "portal_not_connected");
    expect(notConnected.body.errors).toEqual([
      `portal: portal_b - adId: ${unconnectedAd.adId} - user is not connected to the portal`,
    ]);

    const userId = await seller(0);
    const missing = await call("POST", "/publish/", { key, body: { userId, adId: 99999999, portal: "portal_a" } });
    expectError(missing, "ad_not_found");
    expect(missing.body.errors).toEqual(["portal: portal_a - adId: 99999999 - advertisement not found"]);

    const archived = await createAd(key, userId, { status: "archive" });
    const archivedAnswer = await call("POST", "/publish/", {
      key,
      body: { userId, adId: archived.adId, portal: "portal_a" },
    });
    expectError(archivedAnswer, "ad_archived");
    expect(archivedAnswer.body.errors).toEqual([
      `portal: portal_a - adId: ${archived.adId} - advertisement is archived`,
    ]);

    const paid = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    const unpaid = await call("POST", "/publish/", { key, body: { userId, adId: paid.adId, portal: "portal_a" } });
    expectError(unpaid, "insufficient_means");
    expect(unpaid.body.errors).toEqual([`portal: portal_a - adId: ${paid.adId} - insufficient means`]);
    // The spec fixes the text; what it costs and what the wallet holds come beside it, in cents.
    const amounts = unpaid.body.errorDetails?.[0]?.amounts;
    expect(amounts?.balance).toBe(0);
    expect(amounts?.price).toBeGreaterThan(0);
    // `field` names the field at fault, and only where one is: not the portal of every refusal.
    const fieldOf = (answer: { body: { errorDetails?: { field?: string }[] } }) => answer.body.errorDetails?.[0]?.field;
    expect([lockedAnswer, notConnected, missing, archivedAnswer, unpaid].map(fieldOf)).toEqual([
      "userId",
      "portal",
      "adId",
      "adId",
      undefined,
    ]);

    const notPublished = await call("PUT", "/publish/", { key, body: { userId, adId: paid.adId, portal: "portal_a" } });
    expectError(notPublished, "ad_not_published");
    expect(notPublished.body.errors).toEqual([
      `portal: portal_a - adId: ${paid.adId} - this advertisement is not published`,
    ]);

    const business = await seller(0, { companyName: "Handel BV", externalUserId: 7 });
    const sofa = await createAd(key, business, {
      attributes: [{ portal: "portal_b", values: [{ key: "condition", value: "nieuw" }] }],
    });
    const gpsr = await call("POST", "/publish/", {
      key,
      body: { userId: business, adId: sofa.adId, portal: "portal_a" },
    });
    expectError(gpsr, "listing_incomplete");
    // Each refusal names the field a dealer's form writes: the set's key under its portal.
    const productSafety =
      "is required on portal_a for business sellers (product safety), unless a manufacturer is attached";
    expect(gpsr.body.errorDetails).toEqual(
      ["condition", "manufacturerTradename", "manufacturerAddress", "manufacturerEmail"].map((key) => ({
        code: "listing_incomplete",
        field: `attributes.portal_a.${key}`,
        message: `portal: portal_a - adId: ${sofa.adId} - attributes.portal_a.${key}: ${key === "condition" ? "is required" : productSafety}`,
      })),
    );
    const withGpsr = await createAd(key, business, {
      attributes: [{ portal: "portal_a", values: [{ key: "condition", value: "nieuw" }, ...GPSR_VALUES] }],
    });
    expectEnvelope(
      await call("POST", "/publish/", { key, body: { userId: business, adId: withGpsr.adId, portal: "portal_a" } }),
      200,
    );

    const queued = await env.DB.prepare(
      "SELECT count(*) AS n FROM queue_items WHERE ad_id IN (?, ?, ?, ?) AND status != 'cancelled'",
    )
      .bind(lockedAd.adId, unconnectedAd.adId, archived.adId, paid.adId)
      .first<{ n: number }>();
    expect(queued?.n).toBe(0);
  });

  it("refuses at the portal with a reason and refunds; retries transient failures", async () => {
    const userId = await seller();
    const rejected = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Verboden [reject] brommer" });
    const flaky = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Wankele [flaky] brommer" });
    const answer = await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: [rejected.adId, flaky.adId], portal: "portal_a" },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual([
      { adId: rejected.adId, result: true, errors: [], errorDetails: [], queueItemId: expect.any(Number) },
      { adId: flaky.adId, result: true, errors: [], errorDetails: [], queueItemId: expect.any(Number) },
    ]);
    const refusedStatus = await settledPublication(key, userId, rejected.adId);
    expect(refusedStatus).toMatchObject({ error: true, active: false });
    const item = await env.DB.prepare("SELECT status, reason FROM queue_items WHERE ad_id = ?")
      .bind(rejected.adId)
      .first();
    expect(item).toEqual({ status: "error", reason: "rejected by portal" });
    const flakyStatus = await eventually(async () => {
      const publish = await publicationOf(key, userId, flaky.adId);
      return publish?.active ? publish : undefined;
    }, "the flaky listing after retries");
    expect(flakyStatus.remoteAdId).toBeGreaterThan(0);
    const cost = defined(rejected.prices.portal_a[0]).priceTotal;
    expect(await walletBalance(key, userId)).toBe(10_000 - cost);
  }, 60_000);

  it("cancels a pending item: nothing is published and nothing charged", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    // Queue directly (no message), as if the consumer had not reached it yet.
    await env.DB.prepare(
      "INSERT INTO queue_items (ad_id, user_id, portal, action) VALUES (?, ?, 'portal_a', 'publish')",
    )
      .bind(ad.adId, userId)
      .run();
    const cancelled = await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expectEnvelope(cancelled, 200);
    const item = await env.DB.prepare("SELECT status FROM queue_items WHERE ad_id = ?").bind(ad.adId).first();
    expect(item).toEqual({ status: "cancelled" });
    expect(await walletBalance(key, userId)).toBe(10_000);
    expect((await publicationOf(key, userId, ad.adId))?.active).toBe(false);
  });
});

describe("batchall and batchauto", () => {
  it("publishes every active ad to every portal (meta, internal clients), updates them all, and takes them all down", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000);
    const first = await createAd(key, userId);
    const second = await createAd(key, userId);
    await createAd(key, userId, { status: "archive" });

    const refused = await call("POST", "/publish/batchall", { key, body: { userId, portal: "meta" } });
    expectEnvelope(refused, 403);

    const all = await call("POST", "/publish/batchall", { key: internalKey, body: { userId, portal: "meta" } });
    expect(all.status).toBe(200);
    // portal_a and website take both ads; portal_b is not connected.
    expect(all.body.data.filter((o: { result: boolean }) => o.result)).toHaveLength(4);
    expect(all.body.errors).toEqual([
      `portal: portal_b - adId: ${first.adId} - user is not connected to the portal`,
      `portal: portal_b - adId: ${second.adId} - user is not connected to the portal`,
    ]);
    for (const ad of [first, second]) {
      await settledPublication(key, userId, ad.adId, "portal_a");
      expect((await settledPublication(key, userId, ad.adId, "website")).active).toBe(true);
    }

    const auto = await call("PUT", "/publish/batchauto", { key: internalKey, body: { userId, portal: "portal_a" } });
    expectEnvelope(auto, 200);
    expect(auto.body.data).toEqual([
      { adId: first.adId, result: true, errors: [], errorDetails: [], queueItemId: expect.any(Number) },
      { adId: second.adId, result: true, errors: [], errorDetails: [], queueItemId: expect.any(Number) },
    ]);
    const updates = await env.DB.prepare(
      "SELECT count(*) AS n FROM queue_items WHERE ad_id IN (?, ?) AND action = 'update'",
    )
      .bind(first.adId, second.adId)
      .first<{ n: number }>();
    expect(updates?.n).toBe(2);

    const down = await call("DELETE", "/publish/batchall", { key: internalKey, body: { userId, portal: "meta" } });
    expectEnvelope(down, 200);
    for (const ad of [first, second]) {
      expect((await settledPublication(key, userId, ad.adId, "website")).active).toBe(false);
      expect((await settledPublication(key, userId, ad.adId, "portal_a")).active).toBe(false);
    }
  }, 60_000);
});

describe("wallet", () => {
  it("credits and debits for internal clients only", async () => {
    const user = await createUser(key, { externalUserId: 12 });
    const refused = await call("POST", "/wallet/", {
      key,
      body: { userId: user.userId, amount: 100, description: "x" },
    });
    expectEnvelope(refused, 403);
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: 500, description: "storting" },
    });
    const debited = await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: -200, description: "correctie" },
    });
    expect(debited.body.data).toMatchObject({ userId: user.userId, balance: 300 });
    expect(debited.body.data.entries.map((e: { kind: string }) => e.kind)).toEqual(["debit", "credit"]);
  });
});
