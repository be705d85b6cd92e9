import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { jobContext } from "../../src/services/shared";
import { runSyncStep } from "../../src/services/syncs";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, eventually, expectEnvelope, twoClients } from "../harness/api";
import { meteredBindings, onTestShard } from "../harness/d1";
import { connectedSeller, listingsAtMarketplace, walletBalance } from "../harness/marketplace";
import { dyingOnRewrite, stepsHeld, stockItem, stockSyncs } from "../harness/syncs";

/**
 * A dealer's stock at scale: more items than an ending scan's page synced, synced again unchanged (nothing written, nothing
 * charged: measured), then changed in part (exactly those changes reach the marketplace simulator, the
 * ledger as previewed); a sync whose step dies half-way and is run again (one listing per item, each
 * charged once); and a stock read as it arrives, never held whole.
 */

let key: string;
let internalKey: string;

const syncs = stockSyncs(() => key);

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

/** Past a page of the scan for ads a stock no longer holds (500), in steps of CHUNK_ITEMS. */
const ITEMS = 600;
/** Of the next stock: a tenth changed (their price), a twentieth new, a twentieth gone. */
const CHANGED = ITEMS / 10;
const NEW = ITEMS / 20;
const GONE = ITEMS / 20;

const item = (externalAdId: number, price = 100_000) => stockItem(externalAdId, { price: { model: "fixed", price } });

const onlineTitles = async (userId: number) =>
  (await listingsAtMarketplace(key, userId))
    .filter((held) => held.online)
    .map((held) => held.title)
    .sort();

describe("a stock at scale", () => {
  it(`${ITEMS} items: synced, synced again for free (no row of the user's data written), then ${CHANGED} changed, ${NEW} new, ${GONE} gone as previewed`, async () => {
    const userId = await connectedSeller(key, internalKey, 100_000_000);
    const stock = Array.from({ length: ITEMS }, (_, i) => item(i + 1));

    const preview = (await syncs.sendStock(userId, stock, { path: "/syncs/preview" })).body.data;
    expect(preview).toMatchObject({ items: ITEMS, created: ITEMS, refused: 0 });
    const before = await walletBalance(key, userId);
    const first = await syncs.settledSync((await syncs.sendStock(userId, stock)).body.data.syncId);
    expect(first).toMatchObject({ state: "finished", created: ITEMS, charged: preview.cost });
    await syncs.jobsSettled(userId);
    expect(before - (await walletBalance(key, userId))).toBe(preview.cost);
    expect(await onlineTitles(userId)).toEqual(stock.map((it) => it.title).sort());

    // The same stock again, its steps run with a metered D1 session: the sync's own row and its progress
    // event once per step of 50 items, and nothing of the user's ads, jobs or ledger.
    const jobs = await syncs.totalOf(`/jobs/?userId=${userId}&itemsPerPage=1`);
    const balance = await walletBalance(key, userId);
    const again = await syncs.sendStock(userId, stock, { env: stepsHeld() });
    expectEnvelope(again, 200);
    const metered = meteredBindings(stepsHeld());
    const steps = await syncs.runSteps(again.body.data.syncId, metered.env);
    const unchanged = await syncs.syncOf(again.body.data.syncId);
    expect(unchanged).toMatchObject({ state: "finished", unchanged: ITEMS, created: 0, updated: 0, charged: 0 });
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&itemsPerPage=1`)).toBe(jobs);
    expect(await walletBalance(key, userId)).toBe(balance);
    const perItem = metered.usage.rowsWritten / ITEMS;
    console.log(
      `unchanged re-sync of ${ITEMS} items: ${steps} steps, ${metered.usage.rowsWritten} rows written (${perItem} per item), ${metered.usage.rowsRead} read`,
    );
    // Per step of 50: the sync's row (1) and its progress event with its index entries (4); the last
    // step, the sync's end (row and event).
    expect(metered.usage.rowsWritten).toBeLessThanOrEqual(steps * 5);

    const next = [
      ...stock.slice(0, ITEMS - GONE).map((it, i) => (i < CHANGED ? item(it.externalAdId, 90_000) : it)),
      ...Array.from({ length: NEW }, (_, i) => item(2 * ITEMS + 1 + i)),
    ];
    const unchangedNext = ITEMS - GONE - CHANGED;
    const plan = (await syncs.sendStock(userId, next, { path: "/syncs/preview" })).body.data;
    expect(plan).toMatchObject({
      items: ITEMS - GONE + NEW,
      created: NEW,
      updated: CHANGED,
      unchanged: unchangedNext,
      ended: GONE,
      refused: 0,
    });
    expect(plan.targets.portal_a).toMatchObject({ place: NEW, update: CHANGED, remove: GONE });
    const placements = await syncs.totalOf(`/jobs/?userId=${userId}&kind=placement&itemsPerPage=1`);
    const changed = await syncs.settledSync((await syncs.sendStock(userId, next)).body.data.syncId);
    expect(changed).toMatchObject({
      state: "finished",
      created: NEW,
      updated: CHANGED,
      unchanged: unchangedNext,
      ended: GONE,
    });
    expect(changed.charged).toBe(plan.cost);
    await syncs.jobsSettled(userId);
    expect(balance - (await walletBalance(key, userId))).toBe(plan.cost);
    // What reached the marketplace: the new stock online, the changed prices, nothing else sent.
    expect(await onlineTitles(userId)).toEqual(next.map((it) => it.title).sort());
    const held = await listingsAtMarketplace(key, userId);
    expect(held.filter((h) => h.online && h.listing?.price.price === 90_000)).toHaveLength(CHANGED);
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&kind=placement&itemsPerPage=1`)).toBe(placements + NEW);
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&kind=update&itemsPerPage=1`)).toBe(CHANGED);
    expect(await syncs.totalOf(`/jobs/?userId=${userId}&kind=unpublish&itemsPerPage=1`)).toBe(GONE);
  }, 600_000);

  it("a step that dies half-way and runs again: one ad and one listing per item, each placement charged once", async () => {
    const { userId, credentials } = await (async () => {
      const id = await connectedSeller(key, internalKey, 100_000_000);
      const connection = await call("GET", `/oauth/${id}/portal_a/`, { key });
      return { userId: id, credentials: connection.body.data.externalUserId as number };
    })();
    const stock = Array.from({ length: 120 }, (_, i) => item(i + 1));
    const preview = (await syncs.sendStock(userId, stock, { path: "/syncs/preview" })).body.data;
    const before = await walletBalance(key, userId);
    const started = await syncs.sendStock(userId, stock, { env: stepsHeld() });
    const syncId = started.body.data.syncId as number;
    const held = onTestShard(stepsHeld());
    await runSyncStep(jobContext(held), { syncId });
    // The second step dies after its ads are written and its placements queued, before its report is
    // stored (its bucket refuses the write): the sync's row does not move.
    const dying = dyingOnRewrite("report");
    await expect(runSyncStep(jobContext(dying), { syncId })).rejects.toThrow("the process died");
    expect(await syncs.syncOf(syncId)).toMatchObject({ state: "running", applied: 50, created: 50 });
    // Run again, and to the end.
    await syncs.runSteps(syncId, held);
    const done = await syncs.syncOf(syncId);
    expect(done).toMatchObject({ state: "finished", created: 120, charged: preview.cost });
    await syncs.jobsSettled(userId);
    expect(await syncs.totalOf(`/ads/?userId=${userId}&simple=true&itemsPerPage=1`)).toBe(120);
    const summary = await marketplace("portal_a").summary(credentials);
    expect(summary).toMatchObject({ listings: 120, online: 120, duplicateRefs: 0 });
    expect(before - (await walletBalance(key, userId))).toBe(preview.cost);
    // The report says what the dead step planned and queued: every item created, each with its job.
    const report = (await call("GET", `/syncs/${syncId}/items?itemsPerPage=1000`, { key })).body.data as {
      outcome: string;
      targets: { jobId: number | null }[];
    }[];
    expect(report.map((r) => r.outcome)).toEqual(Array(120).fill("created"));
    expect(report.filter((r) => r.targets.length !== 1 || r.targets[0]?.jobId === null)).toEqual([]);
  }, 600_000);

  it("reads a stock as it arrives: its first chunks are stored before the client has sent the rest", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000_000);
    const lines = 1_200;
    const tenthChunks = async () =>
      new Set(
        (await env.STOCKS.list({ prefix: "syncs/" })).objects
          .map((o) => o.key)
          .filter((k) => k.endsWith("/stock/9.json")),
      );
    const earlier = await tenthChunks();
    let sent = 0;
    let storedWhileSending = false;
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === lines) return controller.close();
        // Half-way, the API must already have stored what came before.
        if (sent === lines / 2)
          storedWhileSending = await eventually(
            async () => ([...(await tenthChunks())].some((k) => !earlier.has(k)) ? true : undefined),
            "the stock's tenth chunk to be stored",
          );
        const chunk = Array.from(
          { length: 100 },
          (_, i) => `${JSON.stringify({ ...item(sent + i + 1), targets: [] })}\n`,
        );
        sent += 100;
        controller.enqueue(encoder.encode(chunk.join("")));
      },
    });
    const answer = await call("POST", `/syncs/?userId=${userId}`, {
      key,
      rawBody: body,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectEnvelope(answer, 200);
    expect(storedWhileSending).toBe(true);
    expect(answer.body.data.items).toBe(lines);
    const done = await syncs.settledSync(answer.body.data.syncId);
    expect(done).toMatchObject({ state: "finished", created: lines });
    expect(defined(done).charged).toBe(0);
  }, 600_000);
});
