// The dry run against the real thing: for random sellers, wallets, connections and ads (valid, and
// invalid in each way the API or the marketplace reviews), the dry run's verdict per ad is what a real
// publish then does, as the marketplace simulator and the job show it, and the dry run itself changes no
// row and nothing at the marketplace. `npm test` runs a few; `npm run test:preflight` runs it long.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { PublishTarget } from "../../src/lib/vocabulary";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, eventually, expectEnvelope, twoClients } from "../harness/api";
import {
  activate,
  CAR_ATTRIBUTES,
  CAR_CATEGORY,
  createAd,
  createUser,
  GPSR_VALUES,
  PAID_CATEGORY,
  SOFA_CATEGORY,
} from "../harness/data";
import { connectPortal, walletBalance } from "../harness/marketplace";

const RUNS = Number(env.PREFLIGHT_RUNS || 4);
const SEED = env.PREFLIGHT_SEED ? Number(env.PREFLIGHT_SEED) : undefined;

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

/** Ways an ad can be, each reviewed by the API, by the marketplace, or passing both. */
const AD_KINDS = {
  valid: { categoryId: PAID_CATEGORY, title: "Brommer in orde" },
  validCar: { categoryId: CAR_CATEGORY, title: "Auto in orde", attributes: CAR_ATTRIBUTES },
  refusedByMarketplace: { categoryId: PAID_CATEGORY, title: "Brommer [reject] afgekeurd" },
  biddingOnACar: {
    categoryId: CAR_CATEGORY,
    title: "Auto op bieding",
    attributes: CAR_ATTRIBUTES,
    price: { model: "bidding", price: 900_000, minimumBid: 800_000 },
  },
  minimumBidAbovePrice: {
    categoryId: PAID_CATEGORY,
    title: "Brommer met hoog bod",
    price: { model: "bidding", price: 10_000, minimumBid: 20_000 },
  },
  missingAttributes: { categoryId: CAR_CATEGORY, title: "Auto zonder gegevens", attributes: [] },
  archived: { categoryId: PAID_CATEGORY, title: "Brommer in het archief", status: "archive" },
  furniture: { categoryId: SOFA_CATEGORY, title: "Bank zonder fabrikant" },
  furnitureWithSafetyData: {
    categoryId: SOFA_CATEGORY,
    title: "Bank met fabrikant",
    attributes: [
      {
        portal: "portal_a",
        locale: "nl_NL",
        values: [{ key: "condition", value: "gebruikt" }, ...GPSR_VALUES],
      },
    ],
  },
} as const;
type AdKind = keyof typeof AD_KINDS;

const scenario = fc.record({
  seller: fc.constantFrom("connected", "tokenEnded", "notConnected", "locked"),
  business: fc.boolean(),
  credit: fc.constantFrom(0, 300, 700, 1_000_000),
  target: fc.constantFrom<PublishTarget>("portal_a", "portal_a", "website"),
  ads: fc.array(fc.constantFrom(...(Object.keys(AD_KINDS) as AdKind[])), { minLength: 1, maxLength: 4 }),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** The rows a dry run must not write, and what the user's marketplace account holds. */
async function footprint(account: number | null) {
  const n = async (table: string) =>
    (await env.DB.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>())?.n;
  return {
    jobs: await n("queue_items"),
    ledger: await n("wallet_entries"),
    events: await n("events"),
    idempotencyKeys: await n("idempotency_keys"),
    publications: await n("ad_publications"),
    connections: await n("portal_connections"),
    marketplace: account === null ? null : await marketplace("portal_a").summary(account),
  };
}

async function seller(s: Scenario) {
  const user = await createUser(key, { companyName: s.business ? "Handel B.V." : null });
  if (s.seller !== "locked") await activate(key, user);
  const connection =
    s.seller === "connected" || s.seller === "tokenEnded" ? await connectPortal(key, user.userId, "portal_a") : null;
  if (s.credit)
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: s.credit, description: "tegoed" },
    });
  return { userId: user.userId as number, account: (connection?.externalUserId as number | undefined) ?? null };
}

/** A job once it is done or failed. */
const settledJob = (jobId: number) =>
  eventually(async () => {
    const job = (await call("GET", `/jobs/${jobId}`, { key })).body.data;
    return job.state === "done" || job.state === "error" ? job : undefined;
  }, `job ${jobId} to settle`);

/** One scenario: the dry run changes nothing, and a real publish then does what it said, ad by ad. */
async function realPublishFollowsTheDryRun(s: Scenario) {
  const { userId, account } = await seller(s);
  const adIds: number[] = [];
  for (const kind of s.ads) adIds.push((await createAd(key, userId, AD_KINDS[kind])).adId);
  if (s.seller === "tokenEnded") await marketplace("portal_a").expireTokens();
  const body = { userId, adId: adIds, portal: s.target };

  const before = await footprint(account);
  const dry = await call("POST", "/publish/preflight/", { key, body });
  expectEnvelope(dry, 200);
  // A dry run may renew an ended access token (as a job would), and writes nothing else.
  expect(await footprint(account)).toEqual(before);

  const real = await call("POST", "/publish/batch", { key, body });
  expectEnvelope(real, 200, real.body.result);
  for (const [at, verdict] of dry.body.data.verdicts.entries()) {
    const outcome = defined(real.body.data[at]);
    const what = `${s.ads[at]} (${JSON.stringify(verdict)}) against ${JSON.stringify(outcome)}`;
    expect(outcome.adId, what).toBe(verdict.adId);
    expect(verdict.outcome, what).not.toBe("unverified");
    const code = verdict.errorDetails[0]?.code;
    if (verdict.outcome === "refused" && code !== "listing_refused") {
      // Refused when asked: the same codes and fields, nothing queued.
      expect(outcome.result, what).toBe(false);
      expect(
        outcome.errorDetails.map((d) => [d.code, d.field]),
        what,
      ).toEqual(verdict.errorDetails.map((d) => [d.code, d.field]));
      continue;
    }
    expect(outcome.result, what).toBe(true);
    const job = await settledJob(defined(outcome.queueItemId));
    if (verdict.outcome === "refused") {
      // Refused by the marketplace's review: the job fails with the reason the dry run gave.
      expect(job.state, what).toBe("error");
      expect(verdict.errors, what).toEqual([`portal: ${s.target} - adId: ${verdict.adId} - ${job.lastError}`]);
    } else {
      expect(job.state, what).toBe("done");
      expect(job.kind, what).toBe(verdict.outcome);
      expect(job.cost, what).toBe(verdict.price);
    }
  }
  // What the marketplace holds, and the wallet once every job has run, are what the dry run said.
  const placements = dry.body.data.verdicts.filter((v) => v.outcome === "placement").length;
  if (account !== null && s.target === "portal_a")
    expect((await marketplace("portal_a").summary(account)).listings).toBe(
      (before.marketplace?.listings ?? 0) + placements,
    );
  expect(await walletBalance(key, userId)).toBe(dry.body.data.wallet.balanceAfter);
}

describe("the dry run against a real publish", () => {
  // A run takes about half a second here; the bound leaves a busy machine twenty times that.
  it(
    "gives each ad the verdict the real call then comes to, and changes nothing itself",
    () =>
      fc.assert(fc.asyncProperty(scenario, realPublishFollowsTheDryRun), {
        numRuns: RUNS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        endOnFailure: true,
      }),
    RUNS * 10_000,
  );
});
