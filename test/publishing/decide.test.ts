// The decisions of publish and feature calls, as pure functions of the state a call read: by table (each
// refusal in its order) and by property (random states and requests), with no database in between.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { adAttributes, ads, users } from "../../src/db/schema";
import { PUBLISH_TARGETS, type PublishTarget } from "../../src/lib/vocabulary";
import type { AdRow } from "../../src/services/ads/access";
import { type Catalogue, loadCatalogue } from "../../src/services/catalogue/catalogue";
import { placingPrice } from "../../src/services/catalogue/features";
import {
  type AdDecision,
  connectionStateOf,
  decideFeature,
  decidePreflight,
  decidePublishing,
  firstRefusal,
  isLive,
  type PublishState,
} from "../../src/services/publishing/decide";
import { walkFunds } from "../../src/services/publishing/jobs/funds";
import type { PublishJobRow } from "../../src/services/publishing/jobs/states";
import type { PublishMode } from "../../src/services/publishing/outcomes";
import { walkWallet } from "../../src/services/publishing/preflight";
import type { UserRow } from "../../src/services/shared/access";
import { defined, newClient } from "../harness/api";
import { CAR_CATEGORY, createAd, createUser, PAID_CATEGORY, SOFA_CATEGORY } from "../harness/data";

let catalogue: Catalogue;
let user: UserRow;
/** A complete ad (no attributes needed), and a car with none of the attributes the marketplace asks for. */
let plainAd: AdRow;
let carAd: AdRow;
/** Furniture, for which portal_a asks a business seller for product-safety data. */
let sofaAd: AdRow;
/** The plain ad's attribute rows, as a publish call reads them for one portal. */
let plainAttributes: (typeof adAttributes.$inferSelect)[];

beforeAll(async () => {
  const { key } = await newClient();
  const { userId } = await createUser(key);
  const plain = await createAd(key, userId, { categoryId: PAID_CATEGORY });
  const sofa = await createAd(key, userId, { categoryId: SOFA_CATEGORY, title: "Bank zonder fabrikant" });
  const car = await createAd(key, userId, { categoryId: CAR_CATEGORY, title: "Auto zonder gegevens", attributes: [] });
  const db = getDb(env.DB);
  catalogue = await loadCatalogue(db);
  // As a private seller: portal_a asks product-safety data only of a business.
  user = { ...defined(await db.select().from(users).where(eq(users.id, userId)).get()), companyName: "" };
  const adRow = async (adId: number) => defined(await db.select().from(ads).where(eq(ads.id, adId)).get());
  plainAd = await adRow(plain.adId);
  carAd = await adRow(car.adId);
  sofaAd = await adRow(sofa.adId);
  plainAttributes = await db.select().from(adAttributes).where(eq(adAttributes.adId, plain.adId));
});

/** The attributes of copies of the plain ad (ids `adIds`) on `portal`. */
const attributesOn = (portal: PublishTarget, adIds: number[]) =>
  new Map(adIds.map((adId) => [adId, plainAttributes.filter((row) => row.portal === portal)]));

/** A state in which everything is allowed (for a call to portal_a); each case changes one fact. A live ad is active. */
const stateOf = (overrides: Partial<PublishState> = {}): PublishState => ({
  active: overrides.live ?? new Set(),
  user,
  payerId: user.id,
  locked: false,
  connected: true,
  catalogue,
  ads: new Map([[plainAd.id, plainAd]]),
  live: new Set(),
  attributes: attributesOn("portal_a", [plainAd.id]),
  connection: undefined,
  jobs: [],
  ...overrides,
});

const pendingJob = (adId: number, action: PublishJobRow["action"]): PublishJobRow =>
  ({ id: 1000 + adId, adId, action, status: "pending" }) as PublishJobRow;

const codesOf = (decision: AdDecision) =>
  "refusal" in decision ? decision.refusal.errorDetails.map((d) => d.code) : [];

describe("firstRefusal: one order for every charge", () => {
  const allowed = { locked: false, connected: true, archived: false, live: true };
  it.each([
    ["a locked seller, whatever else", { ...allowed, locked: true, connected: false, archived: true }, "user_locked"],
    ["no connection, before an archived ad", { ...allowed, connected: false, archived: true }, "portal_not_connected"],
    ["an archived ad, before a listing that is not live", { ...allowed, archived: true, live: false }, "ad_archived"],
    ["a listing that is not live, when the work needs one", { ...allowed, live: false }, "ad_not_published"],
    ["nothing", allowed, null],
  ])("refuses %s", (_, facts, expected) => {
    expect(firstRefusal(facts, true)).toBe(expected);
  });
  it("does not ask for a live listing when the work does not need one", () => {
    expect(firstRefusal({ ...allowed, live: false }, false)).toBeNull();
  });
});

describe("decidePublishing by table", () => {
  const decide = (mode: PublishMode, overrides: Partial<PublishState> = {}, portal: PublishTarget = "portal_a") =>
    decidePublishing(stateOf(overrides), { adIds: [plainAd.id], portal, mode, images: true });

  it.each<[string, PublishMode, Partial<PublishState>, string]>([
    ["a locked seller's placement", "publish", { locked: true }, "user_locked"],
    ["a placement without a connection", "publish", { connected: false }, "portal_not_connected"],
    ["an update of an ad not live", "update", {}, "ad_not_published"],
    ["an unpublish of an ad not live, with nothing pending", "unpublish", {}, "ad_not_published"],
    ["an unpublish without a connection", "unpublish", { connected: false, live: new Set([-1]) }, "ad_not_published"],
  ])("refuses %s", (_, mode, overrides, code) => {
    const [only] = decide(mode, overrides).ads;
    expect(codesOf(defined(only))).toEqual([code]);
  });

  it("refuses an unknown ad, and answers each ad asked for once, in order", () => {
    const { ads: decided } = decidePublishing(stateOf(), {
      adIds: [424242, plainAd.id, 424242],
      portal: "portal_a",
      mode: "publish",
      images: true,
    });
    expect(decided.map((d) => d.adId)).toEqual([424242, plainAd.id]);
    expect(codesOf(defined(decided[0]))).toEqual(["ad_not_found"]);
  });

  it("refuses an archived ad after the seller's checks", () => {
    const archived = { ...plainAd, status: "archive" as const };
    const [only] = decide("publish", { ads: new Map([[plainAd.id, archived]]) }).ads;
    expect(codesOf(defined(only))).toEqual(["ad_archived"]);
  });

  it("gives each missing attribute its own message, on a marketplace only", () => {
    const ads = new Map([[carAd.id, carAd]]);
    const request = { adIds: [carAd.id], mode: "publish" as const, images: true };
    const [onMarketplace] = decidePublishing(stateOf({ ads }), { ...request, portal: "portal_a" }).ads;
    expect(codesOf(defined(onMarketplace)).length).toBeGreaterThan(1);
    expect(new Set(codesOf(defined(onMarketplace)))).toEqual(new Set(["listing_incomplete"]));
    const [onWebsite] = decidePublishing(stateOf({ ads }), { ...request, portal: "website" }).ads;
    expect(onWebsite).toMatchObject({ job: { action: "publish", cost: 0 } });
  });

  it("asks a business seller without a manufacturer for product-safety data, on portal_a", () => {
    const business = { ...user, companyName: "Garage De Vries" };
    const request = { adIds: [sofaAd.id], mode: "publish" as const, images: true };
    const state = stateOf({ user: business, ads: new Map([[sofaAd.id, sofaAd]]), attributes: new Map() });
    const [onPortalA] = decidePublishing(state, { ...request, portal: "portal_a" }).ads;
    const fields = (decision: unknown) =>
      (decision as { refusal?: { errorDetails: { field?: string }[] } }).refusal?.errorDetails.map((d) => d.field);
    expect(fields(onPortalA)).toEqual(
      expect.arrayContaining(
        ["manufacturerTradename", "manufacturerAddress", "manufacturerEmail"].map(
          (key) => `attributes.portal_a.${key}`,
        ),
      ),
    );
    const [privately] = decidePublishing({ ...state, user }, { ...request, portal: "portal_a" }).ads;
    expect(JSON.stringify(privately)).not.toContain("product safety");
  });

  it("queues a placement at the category's price, which becomes an update if live (unless it retries)", () => {
    const [fresh] = decide("publish").ads;
    expect(fresh).toMatchObject({
      job: { action: "publish", cost: placingPrice(catalogue, plainAd.categoryId, "portal_a"), updateIfLive: true },
    });
    const [retried] = decidePublishing(stateOf(), {
      adIds: [plainAd.id],
      portal: "portal_a",
      mode: "publish",
      images: true,
      retry: { retryOf: 7, externalRef: "ref-7" },
    }).ads;
    expect(retried).toMatchObject({ job: { updateIfLive: false, retryOf: 7, externalRef: "ref-7" } });
  });

  it("an unpublish withdraws what has not started, and is answered by it when the ad is not live", () => {
    const pending = [pendingJob(plainAd.id, "publish"), pendingJob(plainAd.id, "unpublish")];
    const decision = decide("unpublish", { jobs: pending });
    expect(decision.withdraw.map((job) => job.action)).toEqual(["publish"]);
    expect(decision.ads).toEqual([{ adId: plainAd.id, settledByWithdrawal: true }]);
    const live = decide("unpublish", { jobs: pending, live: new Set([plainAd.id]) });
    expect(live.ads).toEqual([{ adId: plainAd.id, job: expect.objectContaining({ action: "unpublish", cost: 0 }) }]);
    // A listing past its close date is still taken down.
    const ended = decide("unpublish", { active: new Set([plainAd.id]) });
    expect(ended.ads).toEqual([{ adId: plainAd.id, job: expect.objectContaining({ action: "unpublish" }) }]);
  });

  it("reads a listing as live while active and before its close date", () => {
    const now = "2026-11-27T10:00:00.000Z";
    expect(isLive({ active: true, closeDate: null }, now)).toBe(true);
    expect(isLive({ active: true, closeDate: "2026-11-27T10:00:01.000Z" }, now)).toBe(true);
    expect(isLive({ active: true, closeDate: now }, now)).toBe(false);
    expect(isLive({ active: false, closeDate: null }, now)).toBe(false);
    expect(isLive(undefined, now)).toBe(false);
  });
});

describe("decideFeature by table", () => {
  const facts = { locked: false, connected: true, archived: false, live: true, payerId: 1, price: 250 };
  const request = {
    ad: { id: 5, userId: 1 } as AdRow,
    portal: "portal_a" as const,
    feature: "omhoogplaatsen" as const,
  };
  it.each([
    ["a locked seller", { locked: true }, "user_locked"],
    ["a listing that is not live", { live: false }, "ad_not_published"],
    ["a feature not sold in the category", { price: null }, "feature_not_available"],
  ])("refuses %s", (_, overrides, refusal) => {
    expect(decideFeature({ ...facts, ...overrides }, request)).toEqual({ refusal });
  });
  it("queues the feature at its price, paid by the payer", () => {
    expect(decideFeature(facts, request)).toMatchObject({
      job: { action: "feature", feature: "omhoogplaatsen", cost: 250, payerId: 1 },
    });
  });
});

describe("decidePublishing by property", () => {
  const requestArb = fc.record({
    adIds: fc.array(fc.constantFrom(1, 2, 3, 4), { maxLength: 6 }),
    portal: fc.constantFrom(...PUBLISH_TARGETS),
    mode: fc.constantFrom<PublishMode>("publish", "update", "unpublish"),
    images: fc.boolean(),
  });
  const stateArb = fc.record({
    locked: fc.boolean(),
    connected: fc.boolean(),
    known: fc.subarray([1, 2, 3, 4]),
    archived: fc.subarray([1, 2, 3, 4]),
    live: fc.subarray([1, 2, 3, 4]),
    /** Active, past their close date. */
    ended: fc.subarray([1, 2, 3, 4]),
    pending: fc.subarray([1, 2, 3, 4]),
  });
  const toState = (
    portal: PublishTarget,
    s: {
      locked: boolean;
      connected: boolean;
      known: number[];
      archived: number[];
      live: number[];
      ended: number[];
      pending: number[];
    },
  ): PublishState =>
    stateOf({
      locked: s.locked,
      connected: s.connected,
      ads: new Map(
        s.known.map((id) => [id, { ...plainAd, id, status: s.archived.includes(id) ? "archive" : "active" } as AdRow]),
      ),
      live: new Set(s.live.filter((id) => !s.ended.includes(id))),
      active: new Set([...s.live, ...s.ended]),
      attributes: attributesOn(portal, s.known),
      jobs: s.pending.map((id) => pendingJob(id, "update")),
    });

  it("answers every ad asked for once, in order; a job only where no check refuses, charged only as a placement", () => {
    fc.assert(
      fc.property(stateArb, requestArb, (s, request) => {
        const state = toState(request.portal, s);
        const decision = decidePublishing(state, request);
        expect(decision.ads.map((d) => d.adId)).toEqual([...new Set(request.adIds)]);
        for (const d of decision.ads) {
          if (!("job" in d)) continue;
          const ad = defined(state.ads.get(d.adId));
          expect(d.job).toMatchObject({ adId: d.adId, userId: user.id, portal: request.portal });
          if (request.mode === "unpublish") {
            expect(state.active.has(d.adId) && state.connected).toBe(true);
            expect(d.job.cost).toBe(0);
            continue;
          }
          const facts = { locked: state.locked, connected: state.connected, archived: ad.status === "archive" };
          expect(firstRefusal({ ...facts, live: state.live.has(d.adId) }, request.mode === "update")).toBeNull();
          expect(d.job.cost).toBe(
            request.mode === "publish" ? placingPrice(catalogue, ad.categoryId, request.portal) : 0,
          );
        }
        // Only an unpublish withdraws, and never another unpublish.
        if (request.mode !== "unpublish") expect(decision.withdraw).toEqual([]);
        expect(decision.withdraw.every((job) => job.action !== "unpublish")).toBe(true);
      }),
    );
  });

  it("is pure: the same state and request give the same decision, and the state is not changed", () => {
    fc.assert(
      fc.property(stateArb, requestArb, (s, request) => {
        const state = toState(request.portal, s);
        const before = structuredClone({ active: state.active, live: state.live, jobs: state.jobs, ads: state.ads });
        expect(decidePublishing(state, request)).toEqual(decidePublishing(state, request));
        expect({ active: state.active, live: state.live, jobs: state.jobs, ads: state.ads }).toEqual(before);
      }),
    );
  });
});

describe("a dry run's decisions by table", () => {
  const now = "2026-11-25T12:00:00.000Z";
  const on = { status: true, externalUserId: 7, accessToken: "t", refreshToken: "r" };
  it.each([
    ["the website", "website", undefined, "not_needed"],
    ["no connection", "portal_a", undefined, "missing"],
    ["a disconnected one", "portal_a", { ...on, status: false, externalUserId: null }, "missing"],
    ["one the marketplace ended", "portal_a", { ...on, status: false }, "expired"],
    ["a live access token", "portal_a", { ...on, accessTokenExpire: "2026-11-25T13:00:00.000Z" }, "connected"],
    ["an ended one, renewable", "portal_a", { ...on, accessTokenExpire: "2026-11-25T11:00:00.000Z" }, "refreshable"],
    [
      "an ended one, nothing to renew with",
      "portal_a",
      { ...on, accessTokenExpire: null, refreshToken: null },
      "expired",
    ],
  ] as const)("names the connection's state: %s", (_, portal, row, state) => {
    expect(connectionStateOf(portal, row && { accessTokenExpire: null, ...row }, now)).toBe(state);
  });

  const price = () => placingPrice(catalogue, plainAd.categoryId, "portal_a");
  const adsOf = (ids: number[]) => new Map(ids.map((id) => [id, { ...plainAd, id }]));
  /** The dry run's verdicts, the wallet's by the write's funds rule (one query to D1, which writes nothing). */
  const dryRun = async (overrides: Partial<PublishState>, adIds: number[], balance: number) => {
    const state = stateOf({ ads: adsOf(adIds), attributes: attributesOn("portal_a", adIds), ...overrides });
    const decision = decidePublishing(state, { adIds, portal: "portal_a", mode: "publish", images: true });
    const { verdicts, left } = await walkWallet(
      getDb(env.DB),
      "portal_a",
      decidePreflight(state, "portal_a", decision),
      balance,
    );
    return { verdicts, balanceLeft: left };
  };

  it("pays placements in order while the balance lasts, as the write does", async () => {
    const { verdicts, balanceLeft } = await dryRun({}, [1, 2, 3], price() * 2);
    expect(verdicts.map((v) => [v.outcome, v.price])).toEqual([
      ["placement", price()],
      ["placement", price()],
      ["refused", 0],
    ]);
    expect(verdicts[2]?.refusal?.errorDetails[0]).toMatchObject({
      code: "insufficient_means",
      amounts: { price: price(), balance: 0 },
    });
    expect(balanceLeft).toBe(0);
  });

  it("walks the funds as the write does: passes over what it cannot cover, takes a cheaper one after, a free one always", async () => {
    const walk = (costs: number[], balance: number) => walkFunds(getDb(env.DB), costs, balance);
    expect(await walk([300, 100, 0, 200], 250)).toEqual({
      taken: [false, true, true, false],
      before: [250, 250, 150, 150],
      left: 150,
    });
    // A balance below zero (an operator's adjustment) still takes a free update.
    expect(await walk([100, 0], -1)).toEqual({ taken: [false, true], before: [-1, -1], left: -1 });
    expect(await walk([], 40)).toEqual({ taken: [], before: [], left: 40 });
  });

  it("updates a live listing for free, unless an unpublish is open; an open job answers", async () => {
    const live = await dryRun(
      { live: new Set([1, 2]), jobs: [pendingJob(2, "unpublish"), pendingJob(3, "publish")] },
      [1, 2, 3],
      0,
    );
    expect(live.verdicts.map((v) => v.outcome)).toEqual(["update", "refused", "queued"]);
    expect(live.verdicts.map((v) => v.ask)).toEqual([true, false, false]);
    // A listing past its close date was ended by the marketplace: publishing it is a placement again.
    const ended = await dryRun({ active: new Set([1]), live: new Set() }, [1], price());
    expect(ended.verdicts.map((v) => [v.outcome, v.price])).toEqual([["placement", price()]]);
  });
});
