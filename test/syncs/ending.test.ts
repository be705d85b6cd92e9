import { beforeAll, describe, expect, it } from "vitest";
import { jobContext } from "../../src/services/shared";
import { runSyncStep } from "../../src/services/syncs";
import { marketplace } from "../fixtures/marketplace";
import { call, eventually, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { connectedSeller, listingsAtMarketplace, walletBalance } from "../harness/marketplace";
import { dropping, dyingOnRewrite, stepsHeld, stockItem, stockSyncs } from "../harness/syncs";

/**
 * Nothing is ended while it is in flight: an item dropped from the stock while its placement is still
 * at the marketplace waits for it, is then taken off, then deleted; one whose placement never started has
 * it cancelled and refunded; an ending step killed half-way and run again removes the listing once.
 * Checked against what the marketplace simulator holds.
 */

let key: string;
let internalKey: string;
const syncs = stockSyncs(() => key);

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const item = (externalAdId: number) => stockItem(externalAdId);

/** Every stock below ends all of the user's synced ads. */
const ENDS_ALL = "&maxEndedPercent=100";

async function seller() {
  const userId = await connectedSeller(key, internalKey, 10_000_000);
  const account = (await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data.externalUserId as number;
  return { userId, account };
}

/** The user's ad of an item, if it has one. */
const adOf = async (userId: number, externalAdId: number) =>
  (
    (await call("GET", `/ads/?userId=${userId}&itemsPerPage=25`, { key })).body.data as {
      adId: number;
      externalAdId: number | null;
    }[]
  ).find((ad) => ad.externalAdId === externalAdId);

describe("nothing is ended while it is in flight", () => {
  it("a placement held at the marketplace: the dropped item waits for it, then is taken off, then deleted", async () => {
    const { userId, account } = await seller();
    const simulator = marketplace("portal_a");
    await simulator.hold(account, true);
    let second: number;
    try {
      const first = await syncs.settledSync((await syncs.sendStock(userId, [item(1)])).body.data.syncId);
      expect(first).toMatchObject({ state: "finished", created: 1 });
      await eventually(
        async () => ((await syncs.totalOf(`/jobs/?userId=${userId}&state=processing`)) === 1 ? true : undefined),
        "the placement at the marketplace",
      );
      // The stock without it, while its placement is held at the marketplace: the sync waits, the ad stays.
      second = (await syncs.sendStock(userId, [], { query: ENDS_ALL })).body.data.syncId as number;
      await eventually(
        async () => ((await syncs.syncOf(second)).phase === "ending" ? true : undefined),
        "the sync's ending",
      );
      expect(await adOf(userId, 1)).toBeDefined();
      expect((await syncs.syncOf(second)).state).toBe("running");
    } finally {
      await simulator.hold(account, false);
    }
    const ended = await syncs.settledSync(second);
    expect(ended).toMatchObject({ state: "finished", ended: 1 });
    await syncs.jobsSettled(userId);
    // At the marketplace: the placement arrived, then the removal; no listing outlives its ad.
    const held = await listingsAtMarketplace(key, userId);
    expect(held.map((listing) => ({ title: listing.title, online: listing.online }))).toEqual([
      { title: "Brommer 1", online: false },
    ]);
    expect(await adOf(userId, 1)).toBeUndefined();
    const report = (await call("GET", `/syncs/${ended.syncId}/items`, { key })).body.data;
    expect(report).toMatchObject([{ outcome: "ended", targets: [{ portal: "portal_a", action: "remove" }] }]);
    expect(report[0]?.targets[0]?.jobId).toBeTypeOf("number");
  });

  it("a placement that never started: cancelled and refunded, nothing reaches the marketplace, the ad deleted", async () => {
    const { userId, account } = await seller();
    const before = await walletBalance(key, userId);
    // The placement's message is lost: it stays pending, never started.
    const lost = dropping(["sync", "publish"]);
    const firstSync = (await syncs.sendStock(userId, [item(1)], { env: lost })).body.data.syncId as number;
    await syncs.runSteps(firstSync, onTestShard(lost));
    const placed = await syncs.syncOf(firstSync);
    expect(placed).toMatchObject({ state: "finished", created: 1 });
    expect(placed.charged).toBeGreaterThan(0);
    expect(await walletBalance(key, userId)).toBe(before - placed.charged);
    const ended = await syncs.settledSync((await syncs.sendStock(userId, [], { query: ENDS_ALL })).body.data.syncId);
    expect(ended).toMatchObject({ state: "finished", ended: 1 });
    expect(await adOf(userId, 1)).toBeUndefined();
    expect(await walletBalance(key, userId)).toBe(before);
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&state=cancelled`)).toBe(1);
    expect(await marketplace("portal_a").summary(account)).toMatchObject({ listings: 0, creates: 0 });
  });

  it("an ending step killed after it asked for the removal, run again: one removal, the listing offline, the ad deleted", async () => {
    const { userId } = await seller();
    await syncs.settledSync((await syncs.sendStock(userId, [item(1), item(2)])).body.data.syncId);
    await syncs.jobsSettled(userId);
    const started = await syncs.sendStock(userId, [item(2)], { query: ENDS_ALL, env: stepsHeld() });
    const syncId = started.body.data.syncId as number;
    const held = onTestShard(stepsHeld());
    // The items' step, then the ending step dies after queueing the removal, before its report is stored.
    await runSyncStep(jobContext(held), { syncId });
    await runSyncStep(jobContext(held), { syncId });
    const dying = dyingOnRewrite("ended");
    await expect(runSyncStep(jobContext(dying), { syncId })).rejects.toThrow("the process died");
    expect(await adOf(userId, 1)).toBeDefined();
    // Run again until it ends, waiting for the removal as the lanes would.
    await syncs.runSteps(syncId);
    expect(await syncs.syncOf(syncId)).toMatchObject({ state: "finished", ended: 1, unchanged: 1 });
    await syncs.jobsSettled(userId);
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&kind=unpublish`)).toBe(1);
    expect(await adOf(userId, 1)).toBeUndefined();
    const listings = await listingsAtMarketplace(key, userId);
    expect(
      listings.map((l) => ({ title: l.title, online: l.online })).sort((a, b) => a.title.localeCompare(b.title)),
    ).toEqual([
      { title: "Brommer 1", online: false },
      { title: "Brommer 2", online: true },
    ]);
  });
});
