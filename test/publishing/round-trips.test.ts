import { env } from "cloudflare:test";
import { inArray } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { publishJobs } from "../../src/db/schema";
import { publishMessage, requestPublishing, runPublishJobs } from "../../src/services/publishing";
import { callerOf, jobContext } from "../../src/services/shared";
import { call, defined, newClient } from "../harness/api";
import { countingD1, onTestShard } from "../harness/d1";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { withoutMessages } from "../harness/jobs";
import { connectedSeller, listingsAtMarketplace } from "../harness/marketplace";

let key: string;
let internalKey: string;
let clientId: number;

beforeAll(async () => {
  const client = await newClient({ partner: true });
  key = client.key;
  clientId = client.client.id;
  internalKey = (await newClient({ internal: true })).key;
});

describe("D1 round trips of publishing", () => {
  it("queues and charges a batch of 100 ads in at most 5, and runs a consumer batch of placements in 2", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const adIds: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      adIds.push(
        (await createAd(key, userId, { categoryId: PAID_CATEGORY, title: `Brommer ${i}`, externalAdId: i })).adId,
      );
    }
    const counter = countingD1(env.DB);
    const counted = onTestShard(withoutMessages(), 1, counter.d1);
    const ctx = {
      db: getDb(counter.d1),
      env: counted,
      caller: callerOf({ id: clientId, internal: false, partner: true }),
      mediaBase: "/media/",
    };
    const outcomes = await requestPublishing(ctx, {
      userId,
      adIds,
      portal: "portal_a",
      images: true,
      mode: "publish",
    });
    expect(outcomes.every((o) => o.result)).toBe(true);
    // The checks' reads in one batch, the chunk's writes in one, the payer's budget notice check.
    expect(counter.roundTrips).toBeGreaterThanOrEqual(2);
    expect(counter.roundTrips).toBeLessThanOrEqual(5);
    const wallet = await call("GET", `/wallet/${userId}`, { key });
    expect(wallet.body.data.entries.filter((e: { kind: string }) => e.kind === "charge")).toHaveLength(100);

    // The consumer's batch of 25 placements: every claim with its reads in one round trip, every outcome
    // in another; the marketplace calls in between are no D1 round trips.
    const itemIds = outcomes.slice(0, 25).map((o) => defined(o.queueItemId));
    const items = await getDb(env.DB).select().from(publishJobs).where(inArray(publishJobs.id, itemIds));
    counter.reset();
    const settled = await runPublishJobs(jobContext(counted), { messages: items.map((item) => publishMessage(item)) });
    expect(settled.every((s) => s.status === "fulfilled")).toBe(true);
    expect(counter.roundTrips).toBe(2);
    const done = await call("GET", `/jobs/?userId=${userId}&state=done&itemsPerPage=100`, { key });
    expect(done.body.data.map((job) => job.queueItemId).sort()).toEqual([...itemIds].sort());
    const listings = await listingsAtMarketplace(key, userId);
    expect(new Set(listings.map((l) => l.externalRef)).size).toBe(25);

    // A message queued before messages carried their item's columns names only the id: one read more.
    counter.reset();
    const legacyId = defined(outcomes[25]?.queueItemId);
    const [legacy] = await runPublishJobs(jobContext(counted), { messages: [{ kind: "publish", itemId: legacyId }] });
    expect(legacy?.status).toBe("fulfilled");
    expect(counter.roundTrips).toBe(3);
    const job = await call("GET", `/jobs/${legacyId}`, { key });
    expect(job.body.data).toMatchObject({ state: "done" });
  });

  it("tells the caller what it charged: a placement it queued, not one another call queued and paid first", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer betaald" });
    const ctx = {
      db: getDb(env.DB),
      env: onTestShard(withoutMessages()),
      caller: callerOf({ id: clientId, internal: false, partner: true }),
      mediaBase: "/media/",
    };
    const request = { userId, adIds: [adId], portal: "portal_a" as const, images: true, mode: "publish" as const };
    const charges: [number, number][] = [];
    const first = await requestPublishing(ctx, { ...request, charged: (ad, cents) => charges.push([ad, cents]) });
    const wallet = await call("GET", `/wallet/${userId}`, { key });
    const charge = wallet.body.data.entries.find((e: { kind: string }) => e.kind === "charge");
    expect(charges).toEqual([[adId, -defined(charge).amount]]);
    // The same placement again (a sync's call after a manual one): the open job, and no charge of its own.
    const again: [number, number][] = [];
    const second = await requestPublishing(ctx, { ...request, charged: (ad, cents) => again.push([ad, cents]) });
    expect(second[0]?.queueItemId).toBe(defined(first[0]?.queueItemId));
    expect(again).toEqual([]);
  });
});
