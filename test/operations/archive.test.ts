// The archive (src/services/archive): rows past their window leave D1 for R2, per client group and month, the
// ledger's balance stays exact, and the client reads them through GET /archive/<kind>.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runScheduled } from "../../src/cron/minute";
import { getDb } from "../../src/db/client";
import { shardDatabase } from "../../src/db/shards";
import { archiveLedger } from "../../src/services/archive";
import { receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, expectError, groupOf, newClient } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, createUser, PAID_CATEGORY } from "../harness/data";
import { connectedSeller, settledPublication } from "../harness/marketplace";

const SHARD = 2;
const db = shardDatabase(env, SHARD);
/** When the rows were written: far past every window (jobs and ledger 90 days, logs 30). */
const LONG_AGO = "2025-01-15T10:00:00.000Z";
const MONTH = "2025-01";

type Entry = { entryId: number; amount: number; kind: string; description: string };
type Job = { queueItemId: number; cost: number; state: string };
type ImageJob = { jobId: number; done: boolean; result: boolean };

const wallet = async (key: string, userId: number) =>
  expectEnvelope(await call("GET", `/wallet/${userId}`, { key }), 200).data as { balance: number; entries: Entry[] };
const archived = async <T>(key: string, kind: string, query = "") =>
  expectEnvelope(await call("GET", `/archive/${kind}?month=${MONTH}${query}`, { key }), 200).data as T[];
const minute = () => runScheduled(onTestShard(env, SHARD), Date.now());

describe("the archive", () => {
  it("takes jobs, image jobs, ledger entries, events and deliveries past their window to R2, readable, the balance exact", async () => {
    const partner = await newClient({ partner: true, shard: SHARD });
    const internal = await newClient({ internal: true, groupId: await groupOf(partner.client.id) });
    const { key } = partner;
    const hooks = receiver("ok");
    await registerWebhook(key, hooks.url);
    const userId = await connectedSeller(key, internal.key, 100_000);
    const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    // A paid placement, then an update: the placement's job is finished and no longer its publication's latest.
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId, portal: "portal_a" } }), 200);
    await settledPublication(key, userId, adId);
    const placement = (expectEnvelope(await call("GET", `/jobs/?userId=${userId}`, { key }), 200).data as Job[])[0];
    expectEnvelope(await call("PUT", "/publish/", { key, body: { userId, adId, portal: "portal_a" } }), 200);
    await eventually(async () => {
      const jobs = expectEnvelope(await call("GET", `/jobs/?userId=${userId}`, { key }), 200).data as Job[];
      return jobs.length === 2 && jobs.every((job) => job.state === "done") ? true : undefined;
    }, "the update's job");
    await eventually(async () => ((await receivedBy(hooks.name)).length > 0 ? true : undefined), "a delivery");
    // Two image jobs: one stored (its image is on the ad), one refused (not an image).
    expectEnvelope(
      await call("POST", `/images/${adId}`, {
        key,
        body: {
          images: [
            { image: { url: "http://images.test/red.png" } },
            { image: { url: "http://images.test/notes.txt" } },
          ],
        },
      }),
      200,
    );
    const imageJobs = await eventually(async () => {
      const jobs = expectEnvelope(await call("GET", `/imagestatus/${userId}`, { key }), 200).data as ImageJob[];
      return jobs.length === 2 && jobs.every((job) => job.done) ? jobs : undefined;
    }, "the image jobs");
    const [stored, refused] = [imageJobs.find((job) => job.result), imageJobs.find((job) => !job.result)];
    const before = await wallet(key, userId);
    expect(before.entries.map((entry) => entry.kind).sort()).toEqual(["charge", "credit"]);

    // Long ago, as far as the database knows.
    await db.batch([
      db.prepare("UPDATE queue_items SET created_at = ? WHERE user_id = ?").bind(LONG_AGO, userId),
      db.prepare("UPDATE image_jobs SET created_at = ? WHERE user_id = ?").bind(LONG_AGO, userId),
      db.prepare("UPDATE wallet_entries SET created_at = ? WHERE user_id = ?").bind(LONG_AGO, userId),
      db.prepare("UPDATE events SET occurred_at = ? WHERE client_id = ?").bind(LONG_AGO, partner.client.id),
      db
        .prepare(
          "UPDATE webhook_deliveries SET created_at = ? WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE client_id = ?)",
        )
        .bind(LONG_AGO, partner.client.id),
    ]);
    // Someone else's event after them, so none of this client's is the shard's newest (which stays).
    const other = await newClient({ partner: true, shard: SHARD });
    await db
      .prepare("INSERT INTO events (client_id, type, data) VALUES (?, 'publish.active', '{}')")
      .bind(other.client.id)
      .run();

    const summary = await minute();
    expect(summary.failed).toEqual([]);

    // The ledger: one brought-forward entry carries the archived entries' sum; the balance is the same cent.
    const after = await wallet(key, userId);
    expect(after.balance).toBe(before.balance);
    expect(after.entries).toEqual([
      expect.objectContaining({
        amount: before.balance,
        kind: "credit",
        description: expect.stringMatching(/^Balance brought forward/),
      }),
    ]);
    const ledger = await archived<Entry>(key, "ledger", `&userId=${userId}`);
    expect(ledger.map((entry) => entry.entryId).sort()).toEqual(before.entries.map((entry) => entry.entryId).sort());
    expect(ledger.reduce((sum, entry) => sum + entry.amount, 0)).toBe(before.balance);

    // Jobs: the placement's is archived with every other finished one; its publication's latest stays.
    const jobs = expectEnvelope(await call("GET", `/jobs/?userId=${userId}`, { key }), 200).data as Job[];
    expect(jobs).toHaveLength(1);
    const archivedJobs = await archived<Job>(key, "jobs", `&userId=${userId}`);
    expect(archivedJobs).toContainEqual(
      expect.objectContaining({ queueItemId: placement?.queueItemId, cost: placement?.cost, state: "done" }),
    );
    expect(archivedJobs.map((job) => job.queueItemId)).not.toContain(jobs[0]?.queueItemId);
    const latest = await db
      .prepare("SELECT queue_item_id AS id FROM ad_publications WHERE ad_id = ?")
      .bind(adId)
      .first();
    expect(latest).toEqual({ id: jobs[0]?.queueItemId });

    // Image jobs: the refused one is archived, the stored image's stays with its image.
    expect(
      (expectEnvelope(await call("GET", `/imagestatus/${userId}`, { key }), 200).data as ImageJob[]).map(
        (j) => j.jobId,
      ),
    ).toEqual([stored?.jobId]);
    expect(await archived<ImageJob>(key, "images", `&userId=${userId}`)).toEqual([
      expect.objectContaining({ jobId: refused?.jobId, done: true, result: false }),
    ]);

    // Events and deliveries: gone from the database, in the archive.
    const events = await archived<{ eventId: number; type: string; userId: number }>(
      key,
      "events",
      `&userId=${userId}`,
    );
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(["publish.pending", "publish.active"]));
    const left = await db
      .prepare("SELECT count(*) AS n FROM events WHERE id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(events.map((event) => event.eventId)))
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
    const deliveries = await archived<{ deliveryId: number; webhookId: number }>(key, "deliveries");
    expect(deliveries.length).toBeGreaterThan(0);

    // Objects per group and month, NDJSON a person can read.
    const listing = await env.ARCHIVE.list({ prefix: `archive/${await groupOf(partner.client.id)}/${MONTH}/` });
    const kinds = new Set(listing.objects.map((object) => object.key.split("/")[3]));
    expect([...kinds].sort()).toEqual(["deliveries", "events", "images", "jobs", "ledger"]);

    // Another client sees none of it.
    expectError(
      await call("GET", `/archive/jobs?month=${MONTH}&userId=${userId}`, { key: other.key }),
      "user_not_found",
    );
    expect(await archived(other.key, "deliveries")).toEqual([]);

    // A later entry past the window joins the same brought-forward entry: one per payer, the balance exact.
    expectEnvelope(
      await call("POST", "/wallet/", { key: internal.key, body: { userId, amount: -2_500, description: "later" } }),
      200,
    );
    await db
      .prepare("UPDATE wallet_entries SET created_at = ? WHERE user_id = ? AND brought_forward = 0")
      .bind(LONG_AGO, userId)
      .run();
    await minute();
    await minute();
    const carried = await wallet(key, userId);
    expect(carried.balance).toBe(before.balance - 2_500);
    expect(carried.entries).toEqual([expect.objectContaining({ amount: before.balance - 2_500 })]);
  });

  it("a run that dies after writing R2 and before its D1 batch is run again: nothing lost, carried or read twice", async () => {
    const partner = await newClient({ partner: true, shard: SHARD });
    const internal = await newClient({ internal: true, groupId: await groupOf(partner.client.id) });
    const userId = await connectedSeller(partner.key, internal.key, 70_000);
    for (const amount of [-1_000, 2_500])
      expectEnvelope(
        await call("POST", "/wallet/", { key: internal.key, body: { userId, amount, description: "old" } }),
        200,
      );
    await db.prepare("UPDATE wallet_entries SET created_at = ? WHERE user_id = ?").bind(LONG_AGO, userId).run();
    const before = await wallet(partner.key, userId);

    // The shard's database fails the batch that carries and deletes, once: the archive object is written.
    let failures = 1;
    const dying = new Proxy(db, {
      get(target, name, receiver) {
        if (name === "batch" && failures > 0)
          return () => {
            failures -= 1;
            return Promise.reject(new Error("the process died"));
          };
        const value = Reflect.get(target, name, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const now = new Date();
    await expect(
      // Two of the three: the next run picks all three, so two of them are in two objects.
      archiveLedger({ db: getDb(dying), env: onTestShard(env, SHARD, dying), now }, { limit: 2 }),
    ).rejects.toThrow("the process died");
    expect(await wallet(partner.key, userId)).toEqual(before);

    expect(await archiveLedger({ db: getDb(db), env: onTestShard(env, SHARD), now }, { limit: 500 })).toBe(3);
    const after = await wallet(partner.key, userId);
    expect(after.balance).toBe(before.balance);
    expect(after.entries).toEqual([expect.objectContaining({ amount: before.balance })]);
    const ledger = await archived<Entry>(partner.key, "ledger", `&userId=${userId}`);
    expect(ledger.map((entry) => entry.entryId).sort()).toEqual(before.entries.map((entry) => entry.entryId).sort());
  });

  it("carries the entries of at most 50 payers a run, the others' the next, every balance exact", async () => {
    const partner = await newClient({ partner: true, shard: SHARD });
    const internal = await newClient({ internal: true, groupId: await groupOf(partner.client.id) });
    const payers: number[] = [];
    for (let i = 0; i < 51; i += 1) {
      const userId = (await createUser(partner.key)).userId as number;
      expectEnvelope(
        await call("POST", "/wallet/", { key: internal.key, body: { userId, amount: 100 + i, description: "old" } }),
        200,
      );
      payers.push(userId);
    }
    const placeholders = payers.map(() => "?").join(",");
    await db
      .prepare(`UPDATE wallet_entries SET created_at = ? WHERE user_id IN (${placeholders})`)
      .bind(LONG_AGO, ...payers)
      .run();
    const context = { db: getDb(db), env: onTestShard(env, SHARD), now: new Date() };
    const carried = async () =>
      (
        await db
          .prepare(
            `SELECT count(*) AS n FROM wallet_entries WHERE brought_forward = 1 AND user_id IN (${placeholders})`,
          )
          .bind(...payers)
          .first<{ n: number }>()
      )?.n;

    expect(await archiveLedger(context, { limit: 500 })).toBe(50);
    expect(await carried()).toBe(50);
    expect(await archiveLedger(context, { limit: 500 })).toBe(1);
    expect(await carried()).toBe(51);
    for (const [i, userId] of payers.entries()) expect((await wallet(partner.key, userId)).balance).toBe(100 + i);
  });

  it("refuses a month that is not YYYY-MM, and a user's deliveries (a parameter the route does not take), naming the field", async () => {
    const { key } = await newClient({ partner: true, shard: SHARD });
    expectError(await call("GET", "/archive/jobs?month=2025-13", { key }), "validation_failed");
    expect((await call("GET", "/archive/jobs?month=2025-13", { key })).body.errors[0]).toMatch(/^month:/);
    const refused = await call("GET", `/archive/deliveries?month=${MONTH}&userId=1`, { key });
    expectError(refused, "unknown_field");
    expect(refused.body.errors[0]).toMatch(/^userId:/);
  });
});
