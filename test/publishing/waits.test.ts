// A job that may be at its marketplace and has no connection to ask through waits, visibly and for at
// most WAIT_BOUND_MS; then, or when no one can connect again, it is refunded and recorded for reconciliation.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { publishJobs } from "../../src/db/schema";
import { publishMessage, queueJobs, runPublishJobs, WAIT_BOUND_MS } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { marketplace } from "../fixtures/marketplace";
import { call, defined, expectEnvelope, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { placements, runPublishJob, withoutMessages } from "../harness/jobs";
import { authorizeAccount, connectedSellerAccount } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const accountOf = async (userId: number) =>
  defined((await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data.externalUserId as number | null);

/** The job as GET /jobs/ shows it (to an internal client, which sees a deleted user's jobs too). */
const jobOf = async (jobId: number) => (await call("GET", `/jobs/${jobId}`, { key: internalKey })).body.data;

/** The job's events of the wait, oldest first: their types and data. */
const waitEventsOf = async (jobId: number) =>
  (
    await env.DB.prepare(
      "SELECT type, data FROM events WHERE type LIKE 'job.%' AND json_extract(data, '$.queueItemId') = ? ORDER BY id",
    )
      .bind(jobId)
      .all<{ type: string; data: string }>()
  ).results.map((row) => ({ type: row.type, data: JSON.parse(row.data) }));

/** Runs the job once, as a delivery of its message would; a run that leaves it to retry is no failure here. */
const runOnce = (jobId: number) => runPublishJob(onTestShard(), jobId).catch(() => undefined);

/**
 * A placement whose first attempt reached the marketplace (committed, answered 503), whose seller then
 * disconnected: the job may be at the marketplace and has no connection to ask through.
 */
async function jobThatMayBeThere() {
  const { userId, credentials } = await connectedSellerAccount(key, internalKey, 100_000);
  const account = await accountOf(userId);
  const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer die wacht" });
  const [queued] = await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, [adId]));
  const jobId = defined(queued && "jobId" in queued ? queued.jobId : undefined);
  await marketplace("portal_a").fault(account, "commit-then-503", 1);
  await runOnce(jobId);
  expect(await jobOf(jobId)).toMatchObject({ state: "pending", attempts: 1, waitingSince: null });
  expect(await marketplace("portal_a").summary(account)).toMatchObject({ listings: 1 });
  expectEnvelope(await call("DELETE", `/oauth/${userId}/portal_a/`, { key }), 200);
  return { userId, account, credentials, adId, jobId };
}

const ledgerOf = async (userId: number) =>
  (
    await env.DB.prepare(
      "SELECT kind, amount FROM wallet_entries WHERE user_id = ? AND queue_item_id IS NOT NULL ORDER BY id",
    )
      .bind(userId)
      .all<{ kind: string; amount: number }>()
  ).results;

describe("a job waiting for a connection", () => {
  it("waits from a moment its re-runs do not move, says so, and past the bound is refunded and recorded", async () => {
    const { userId, account, jobId } = await jobThatMayBeThere();
    await runOnce(jobId);
    const waiting = await jobOf(jobId);
    expect(waiting).toMatchObject({ state: "pending", lastError: expect.stringContaining("waiting for the user") });
    expect(waiting.waitingSince).toEqual(expect.any(String));
    expect(await waitEventsOf(jobId)).toEqual([
      {
        type: "job.waiting",
        data: { queueItemId: jobId, reason: expect.stringContaining("connect the portal again") },
      },
    ]);

    // Runs while it waits move neither its start nor add an event.
    await runOnce(jobId);
    await runOnce(jobId);
    expect((await jobOf(jobId)).waitingSince).toBe(waiting.waitingSince);
    expect(await waitEventsOf(jobId)).toHaveLength(1);
    expect(await ledgerOf(userId)).toEqual([{ kind: "charge", amount: expect.any(Number) }]);

    // The clock passes the bound (the wait's start moved back past it).
    const past = new Date(Date.now() - WAIT_BOUND_MS - 60_000).toISOString();
    await env.DB.prepare("UPDATE queue_items SET waiting_since = ? WHERE id = ?").bind(past, jobId).run();
    await runOnce(jobId);
    const settled = await jobOf(jobId);
    expect(settled).toMatchObject({ state: "error", refunded: true, waitingSince: null });
    expect(settled.lastError).toMatch(/^unresolved: portal_a could not be asked for 24 hours/);
    const [charge] = await ledgerOf(userId);
    expect(await ledgerOf(userId)).toEqual([charge, { kind: "refund", amount: -defined(charge).amount }]);
    const events = await waitEventsOf(jobId);
    expect(events.map((event) => event.type)).toEqual(["job.waiting", "job.wait_ended", "job.unresolved"]);
    expect(events[1]?.data).toEqual({ queueItemId: jobId, outcome: "failed" });
    // The record names what the marketplace holds: the listing under the job's reference.
    const [listing] = await marketplace("portal_a").listings(account);
    expect(events[2]?.data).toEqual({
      queueItemId: jobId,
      kind: "placement",
      externalRef: defined(listing).externalRef,
      account,
      cost: -defined(charge).amount,
      reason: settled.lastError,
    });
  });

  it("ends its wait when the same account connects again, and finds the listing its first attempt made", async () => {
    const { userId, account, credentials, jobId } = await jobThatMayBeThere();
    await runOnce(jobId);
    expect((await jobOf(jobId)).waitingSince).toEqual(expect.any(String));
    expectEnvelope((await authorizeAccount(key, userId, "portal_a", credentials)).answer, 200);
    await runOnce(jobId);
    expect(await jobOf(jobId)).toMatchObject({ state: "done", refunded: false, waitingSince: null });
    expect(await marketplace("portal_a").summary(account)).toMatchObject({ listings: 1, duplicateRefs: 0 });
    expect((await waitEventsOf(jobId)).map((event) => [event.type, event.data.outcome])).toEqual([
      ["job.waiting", undefined],
      ["job.wait_ended", "succeeded"],
    ]);
  });

  it("does not hold the seller's connection to another account; the job stays apart and is settled unresolved", async () => {
    const { userId, account, jobId } = await jobThatMayBeThere();
    await runOnce(jobId);
    const other = await authorizeAccount(key, userId, "portal_a");
    expectEnvelope(other.answer, 200);
    await runOnce(jobId);
    const settled = await jobOf(jobId);
    expect(settled).toMatchObject({ state: "error", refunded: true });
    expect(settled.lastError).toMatch(/^unresolved: the user connected another portal_a account/);
    expect(await marketplace("portal_a").summary(await accountOf(userId))).toMatchObject({ listings: 0 });
    const events = await waitEventsOf(jobId);
    expect(events.map((event) => event.type)).toEqual(["job.waiting", "job.wait_ended", "job.unresolved"]);
    // The record names the old account, where the listing is, not the one connected now.
    expect(events[2]?.data).toMatchObject({ account, kind: "placement" });
    expect(await marketplace("portal_a").summary(account)).toMatchObject({ listings: 1 });
  });

  it("of a seller who was deleted is settled at its next run: no one can connect again", async () => {
    const { userId, jobId } = await jobThatMayBeThere();
    await runOnce(jobId);
    expectEnvelope(await call("DELETE", `/users/${userId}`, { key }), 200);
    await runOnce(jobId);
    const settled = await jobOf(jobId);
    expect(settled).toMatchObject({ state: "error", refunded: true });
    expect(settled.lastError).toMatch(/^unresolved: the user was deleted/);
    expect((await waitEventsOf(jobId)).map((event) => event.type)).toEqual([
      "job.waiting",
      "job.wait_ended",
      "job.unresolved",
    ]);
  });

  it("for a marketplace that does not answer starts when settling cannot ask, and ends unresolved when settling past the bound", async () => {
    const { userId, credentials, jobId } = await jobThatMayBeThere();
    expectEnvelope((await authorizeAccount(key, userId, "portal_a", credentials)).answer, 200);
    const portal = marketplace("portal_a");
    await portal.outage(true);
    try {
      // Its retries ran out (the dead-letter queue): settling asks the marketplace, which does not answer.
      const settleOnce = async () => {
        const row = await getDb(env.DB).select().from(publishJobs).where(eq(publishJobs.id, jobId)).get();
        const [given] = await runPublishJobs(jobContext(onTestShard()), {
          messages: [publishMessage(defined(row))],
          mode: "give-up",
        });
        expect(given?.status).toBe("fulfilled");
      };
      await settleOnce();
      expect(await jobOf(jobId)).toMatchObject({ state: "pending", waitingSince: expect.any(String) });
      expect((await waitEventsOf(jobId)).map((event) => event.type)).toEqual(["job.waiting"]);

      // Sent again by the cron: sending is no asking, so its failure only retries, and the wait goes on.
      const past = new Date(Date.now() - WAIT_BOUND_MS - 60_000).toISOString();
      await env.DB.prepare("UPDATE queue_items SET waiting_since = ? WHERE id = ?").bind(past, jobId).run();
      await runOnce(jobId);
      expect(await jobOf(jobId)).toMatchObject({ state: "pending", refunded: false });
      // Settling again, past the bound, still without an answer: unresolved.
      await settleOnce();
    } finally {
      await portal.outage(false);
    }
    const settled = await jobOf(jobId);
    expect(settled).toMatchObject({ state: "error", refunded: true, waitingSince: null });
    expect(settled.lastError).toMatch(/^unresolved: portal_a could not be asked for 24 hours \(/);
    expect((await waitEventsOf(jobId)).map((event) => event.type)).toEqual([
      "job.waiting",
      "job.wait_ended",
      "job.unresolved",
    ]);
  });
});

describe("a deleted seller's kept connection", () => {
  it("renews its tokens for the seller's open job without storing the account's e-mail again", async () => {
    const { userId } = await connectedSellerAccount(key, internalKey, 100_000);
    const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer na het wissen" });
    const [queued] = await queueJobs(jobContext(onTestShard(withoutMessages())), placements(userId, [adId]));
    const jobId = defined(queued && "jobId" in queued ? queued.jobId : undefined);
    // Its first attempt may have reached the marketplace: the job stays open, and the connection with it.
    await marketplace("portal_a").fault(await accountOf(userId), "commit-then-503", 1);
    await runOnce(jobId);
    expectEnvelope(await call("DELETE", `/users/${userId}`, { key }), 200);
    const emailOf = async () =>
      (
        await env.DB.prepare("SELECT email, status FROM portal_connections WHERE user_id = ? AND portal = 'portal_a'")
          .bind(userId)
          .first<{ email: string; status: number }>()
      )?.email;
    expect(await emailOf()).toBe("");
    // The job's token ended at the marketplace: running it renews the kept connection's tokens.
    await env.DB.prepare("UPDATE portal_connections SET access_token_expire = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 60_000).toISOString(), userId)
      .run();
    await runOnce(jobId);
    const renewed = await env.DB.prepare("SELECT access_token_expire FROM portal_connections WHERE user_id = ?")
      .bind(userId)
      .first<{ access_token_expire: string | null }>();
    expect(Date.parse(defined(renewed?.access_token_expire))).toBeGreaterThan(Date.now());
    expect(await emailOf()).toBe("");
  });
});
