import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  getQueueResult,
} from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { executeJobs } from "../../src/jobs/execute";
import { publishMessage, queueJobs } from "../../src/services/publishing";
import { type JobMessage, jobContext } from "../../src/services/shared";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, eventually, expectEnvelope, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { placements, withoutMessages } from "../harness/jobs";
import { connectedSeller, publicationOf, settledPublication, walletBalance } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const seller = (credit = 100_000) => connectedSeller(key, internalKey, credit);

/** What reached the marketplace simulator for the user's portal_a account. */
async function atMarketplace(userId: number) {
  const connection = await call("GET", `/oauth/${userId}/portal_a/`, { key });
  const simulator = marketplace("portal_a");
  const account = connection.body.data.externalUserId as number;
  return { summary: await simulator.summary(account), listings: await simulator.listings(account) };
}

const rows = async <T>(query: string, ...params: unknown[]) =>
  (
    await env.DB.prepare(query)
      .bind(...params)
      .all<T>()
  ).results;

const ledger = (userId: number) =>
  rows<{ kind: string; n: number }>(
    "SELECT kind, count(*) AS n FROM wallet_entries WHERE user_id = ? AND kind != 'credit' GROUP BY kind ORDER BY kind",
    userId,
  );

/** Runs the cron's scheduled work now. */
async function runCron() {
  await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env);
}

describe("one open intent per ad, portal and kind", () => {
  it("20 parallel identical POST /publish/: one charge, one job, one live listing", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer twintig keer" });
    const price = ad.prices.portal_a[0]?.priceTotal as number;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }),
      ),
    );
    for (const answer of answers) expectEnvelope(answer, 200);
    // Every caller is told about the same job.
    const locations = new Set(answers.map((a) => a.headers.get("Location")));
    expect(locations.size).toBe(1);
    const [location] = [...locations];
    expect(location).toMatch(/^\/rest\/v1\/jobs\/\d+$/);

    const published = await settledPublication(key, userId, ad.adId);
    expect(published).toMatchObject({ active: true, online: true, error: false, errorReason: null });
    expect(`/rest/v1/jobs/${published.queueItemId}`).toBe(location);
    expect(await rows("SELECT id FROM queue_items WHERE ad_id = ?", ad.adId)).toHaveLength(1);
    expect(await ledger(userId)).toEqual([{ kind: "charge", n: 1 }]);
    expect(await walletBalance(key, userId)).toBe(100_000 - price);
    const { summary } = await atMarketplace(userId);
    expect(summary).toMatchObject({ listings: 1, online: 1, duplicateRefs: 0 });

    // DELETE takes down the one listing there is: nothing stays live.
    expectEnvelope(
      await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }),
      200,
    );
    expect(await settledPublication(key, userId, ad.adId)).toMatchObject({ active: false, online: false });
    expect((await atMarketplace(userId)).summary).toMatchObject({ listings: 1, online: 0 });
  }, 60_000);

  it("20 parallel identical POST /features/: one charge, one job, one purchase at the marketplace", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { title: "Bank met een feature" });
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    await settledPublication(key, userId, ad.adId);
    const before = await walletBalance(key, userId);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("POST", "/features/", { key, body: { adId: ad.adId, portal: "portal_a", feature: "omhoogplaatsen" } }),
      ),
    );
    for (const answer of answers) expectEnvelope(answer, 200);
    expect(new Set(answers.map((a) => a.headers.get("Location"))).size).toBe(1);
    const feature = await eventually(async () => {
      const answer = await call("GET", `/status/${userId}/${ad.adId}`, { key });
      const portal = answer.body.data[0]?.portals[0];
      const f = portal?.features ? portal?.features[0] : undefined;
      return f && !f.pending ? { feature: f, publish: portal?.publish } : undefined;
    }, "the feature to settle");
    expect(feature.feature).toMatchObject({ feature: "omhoogplaatsen", active: true, error: false });
    // A feature never leaves the publication looking busy.
    expect(feature.publish).toMatchObject({ processing: false, pending: false, active: true });
    expect(await rows("SELECT id FROM queue_items WHERE ad_id = ? AND action = 'feature'", ad.adId)).toHaveLength(1);
    const charges = await rows<{ amount: number }>(
      "SELECT amount FROM wallet_entries WHERE ad_id = ? AND kind = 'charge' AND description LIKE 'omhoogplaatsen%'",
      ad.adId,
    );
    expect(charges).toHaveLength(1);
    expect(await walletBalance(key, userId)).toBe(before + (charges[0]?.amount ?? 0));
    expect((await atMarketplace(userId)).summary.features).toBe(1);
  }, 60_000);

  it("20 parallel PUT /publish/batchauto: one update job per ad", async () => {
    const userId = await seller();
    const first = await createAd(key, userId, { title: "Eerste bank voor updates" });
    const second = await createAd(key, userId, { title: "Tweede bank voor updates" });
    await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: [first.adId, second.adId], portal: "portal_a" },
    });
    await settledPublication(key, userId, first.adId);
    await settledPublication(key, userId, second.adId);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("PUT", "/publish/batchauto", { key, body: { userId, portal: "portal_a" } }),
      ),
    );
    for (const answer of answers) expectEnvelope(answer, 200);
    const jobIds = new Set(answers.flatMap((a) => a.body.data.map((o) => o.queueItemId)));
    expect(jobIds.size).toBe(2);
    await settledPublication(key, userId, first.adId);
    await settledPublication(key, userId, second.adId);
    const updates = await rows<{ ad_id: number; n: number }>(
      "SELECT ad_id, count(*) AS n FROM queue_items WHERE ad_id IN (?, ?) AND action = 'update' GROUP BY ad_id",
      first.adId,
      second.adId,
    );
    expect(updates.map((u) => u.n)).toEqual([1, 1]);
    expect((await atMarketplace(userId)).summary).toMatchObject({ listings: 2, online: 2 });
  }, 60_000);

  it("a second identical call while the job is open answers as the first and charges nothing more", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    // Rows written, message never sent: the job stays open as long as the test likes.
    const [queued] = await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, [ad.adId], 500));
    expect(queued).toMatchObject({ created: true });
    const again = await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expectEnvelope(again, 200);
    expect(again.headers.get("Location")).toBe(`/rest/v1/jobs/${queued?.jobId}`);
    expect(await ledger(userId)).toEqual([{ kind: "charge", n: 1 }]);
  });
});

describe("at-least-once delivery and crashes", () => {
  it("a message delivered twice, even in one batch, makes one listing and one charge; a failure retries only its own", async () => {
    const userId = await seller();
    const adIds: number[] = [];
    for (let i = 0; i < 5; i += 1)
      adIds.push(
        (await createAd(key, userId, { categoryId: PAID_CATEGORY, title: i === 4 ? "Wankel [flaky]" : `Dubbel ${i}` }))
          .adId,
      );
    const queued = await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, adIds));
    const itemIds = queued.map((q) => defined(q?.jobId));
    // Each message twice in one batch: as the API sends it, and naming only the item (an older message).
    const messages = itemIds.flatMap((itemId, i) => [
      {
        id: `dup-${i}-0`,
        timestamp: new Date(),
        attempts: 1,
        body: publishMessage({
          id: itemId,
          userId,
          adId: adIds[i] as number,
          portal: "portal_a",
          action: "publish",
          feature: null,
        }),
      },
      { id: `dup-${i}-1`, timestamp: new Date(), attempts: 1, body: { kind: "publish", itemId } satisfies JobMessage },
    ]);
    const batch = createMessageBatch<JobMessage>("jobs", messages);
    const ctx = createExecutionContext();
    await executeJobs(batch, env);
    const result = await getQueueResult(batch, ctx);
    // The flaky placement's claiming copy is retried; its duplicate found it taken and is done with.
    expect(result.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual(["dup-4-0"]);
    expect(result.explicitAcks).toHaveLength(9);
    for (const adId of adIds.slice(0, 4))
      expect(await settledPublication(key, userId, adId)).toMatchObject({ active: true, online: true });
    const flaky = await call("GET", `/jobs/${itemIds[4]}`, { key });
    expect(flaky.body.data).toMatchObject({ state: "pending", attempts: 1 });
    expect(flaky.body.data.lastError).toEqual(expect.any(String));
    expect((await atMarketplace(userId)).summary).toMatchObject({ listings: 4, online: 4, duplicateRefs: 0 });
    expect(await ledger(userId)).toEqual([{ kind: "charge", n: 5 }]);
  });

  it("a batch killed after writing its rows, before sending its messages, is finished by the cron", async () => {
    const userId = await seller();
    const adIds: number[] = [];
    for (let i = 0; i < 30; i += 1)
      adIds.push((await createAd(key, userId, { categoryId: PAID_CATEGORY, title: `Verloren bericht ${i}` })).adId);
    // The process dies after the D1 batch: the messages are lost.
    await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, adIds));
    // One of them was being worked on when the process died.
    await env.DB.prepare(
      "UPDATE queue_items SET status = 'processing', updated_at = ? WHERE id = (SELECT min(id) FROM queue_items WHERE user_id = ?)",
    )
      .bind(new Date(Date.now() - 6 * 60_000).toISOString(), userId)
      .run();
    const pending = await publicationOf(key, userId, adIds[1] as number);
    expect(pending).toMatchObject({ pending: true, active: false });

    // A cron run right away leaves the 29 recent items alone (their message may still be on its way); the
    // one stuck in processing for 6 minutes it sends again.
    await runCron();
    const recent = await rows(
      "SELECT id FROM queue_items WHERE user_id = ? AND status = 'pending' AND id > (SELECT min(id) FROM queue_items WHERE user_id = ?)",
      userId,
      userId,
    );
    expect(recent).toHaveLength(29);
    // Three minutes on, the cron sends them again.
    await env.DB.prepare("UPDATE queue_items SET retry_at = ? WHERE user_id = ? AND status = 'pending'")
      .bind(new Date(Date.now() - 3 * 60_000).toISOString(), userId)
      .run();
    await runCron();
    for (const adId of adIds)
      expect(await settledPublication(key, userId, adId)).toMatchObject({ active: true, online: true });
    expect((await atMarketplace(userId)).summary).toMatchObject({ listings: 30, online: 30, duplicateRefs: 0 });
    expect(await ledger(userId)).toEqual([{ kind: "charge", n: 30 }]);
  }, 90_000);

  it("a portal that fails and recovers ends each placement once; unpublish → publish places a new listing", async () => {
    const userId = await seller();
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Wankele [flaky] brommer" });
    const price = ad.prices.portal_a[0]?.priceTotal as number;
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const first = await eventually(async () => {
      const p = await publicationOf(key, userId, ad.adId);
      return p?.active ? p : undefined;
    }, "the flaky placement");
    const job = await call("GET", `/jobs/${first.queueItemId}`, { key });
    expect(job.body.data).toMatchObject({ kind: "placement", state: "done", attempts: 3, lastError: null });

    await call("DELETE", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expect(await settledPublication(key, userId, ad.adId)).toMatchObject({ active: false, online: false });
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const again = await eventually(async () => {
      const p = await publicationOf(key, userId, ad.adId);
      return p?.active && !p?.pending ? p : undefined;
    }, "the second placement");
    expect(again).toMatchObject({ active: true, online: true });
    expect(again.remoteAdId).not.toBe(first.remoteAdId);
    const { listings } = await atMarketplace(userId);
    expect(listings.map((l) => [l.remoteAdId, l.online])).toEqual([
      [first.remoteAdId, false],
      [again.remoteAdId, true],
    ]);
    // A new placement is paid again.
    expect(await walletBalance(key, userId)).toBe(100_000 - 2 * price);
  }, 90_000);
});
