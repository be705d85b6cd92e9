// Each client's share of the shared lanes (src/jobs/clientLanes.ts): the queues hand every job to its
// client's lanes, which run it within the client's slots; a dry run's marketplace reviews take the same slots.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { LANE_SHARES } from "../../src/jobs/lanes";
import type { JobMessage } from "../../src/services/shared";
import { clientLanesOf } from "../../src/services/shared";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

const lanesOf = (clientId: number) => clientLanesOf(env, clientId);

const jobOf = async (key: string, jobId: number) =>
  (await call("GET", `/jobs/${jobId}`, { key })).body.data as { state: string };

describe("a client's lanes", () => {
  it("a client's publish jobs and its dry runs' marketplace reviews share its slots; another client's do not wait", async () => {
    const [a, b, internal] = await Promise.all([
      newClient({ partner: true }),
      newClient({ partner: true }),
      newClient({ internal: true }),
    ]);
    const [aSeller, bSeller] = await Promise.all([
      connectedSeller(a.key, internal.key, 100_000),
      connectedSeller(b.key, internal.key, 100_000),
    ]);
    const [aAd, aDryAd, bAd] = await Promise.all([
      createAd(a.key, aSeller, { categoryId: PAID_CATEGORY }),
      createAd(a.key, aSeller, { categoryId: PAID_CATEGORY }),
      createAd(b.key, bSeller, { categoryId: PAID_CATEGORY }),
    ]);

    // Something of A's holds every slot of A's marketplace lane; no more are granted.
    const lanes = lanesOf(a.client.id);
    const held = await lanes.hold("marketplace", 1_000, 60_000);
    expect(held.slots).toBe(LANE_SHARES.marketplace.slots);
    expect((await lanes.hold("marketplace", 1, 60_000)).slots).toBe(0);

    // A's publish job and A's dry run wait for A's slots; B's job runs at once.
    const publish = async (key: string, userId: number, adId: number) => {
      const answer = await call("POST", "/publish/", { key, body: { userId, adId, portal: "portal_a" } });
      expectEnvelope(answer, 200);
      return Number(answer.headers.get("Job-Ids"));
    };
    const aJob = await publish(a.key, aSeller, aAd.adId);
    const dryRunStarted = Date.now();
    const dryRun = call("POST", "/publish/preflight/", {
      key: a.key,
      body: { userId: aSeller, adId: [aDryAd.adId], portal: "portal_a" },
    });
    const bJob = await publish(b.key, bSeller, bAd.adId);
    await eventually(async () => ((await jobOf(b.key, bJob)).state === "done" ? true : undefined), "B's job");
    expect((await jobOf(a.key, aJob)).state).toBe("pending");
    expect((await lanes.waiting()).marketplace).toBe(1);

    // Once A's slots are free, A's job runs and A's dry run is reviewed by the marketplace.
    const heldForMs = Date.now() - dryRunStarted;
    await lanes.release(held.id, heldForMs);
    await eventually(async () => ((await jobOf(a.key, aJob)).state === "done" ? true : undefined), "A's job");
    const reviewed = await dryRun;
    expectEnvelope(reviewed, 200);
    expect(Date.now() - dryRunStarted).toBeGreaterThanOrEqual(heldForMs);
    expect(reviewed.body.data.verdicts).toEqual([
      expect.objectContaining({ adId: aDryAd.adId, outcome: "placement", verifiedByMarketplace: true }),
    ]);
  }, 120_000);

  it("a dry run that finds no room in its client's share within its patience answers unverified, naming why", async () => {
    const [a, internal] = await Promise.all([newClient({ partner: true }), newClient({ internal: true })]);
    const seller = await connectedSeller(a.key, internal.key, 100_000);
    const ad = await createAd(a.key, seller, { categoryId: PAID_CATEGORY });
    await lanesOf(a.client.id).hold("marketplace", 1_000, 60_000);
    const answer = await call("POST", "/publish/preflight/", {
      key: a.key,
      body: { userId: seller, adId: [ad.adId], portal: "portal_a" },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data.verdicts).toEqual([
      expect.objectContaining({
        adId: ad.adId,
        outcome: "unverified",
        verifiedByMarketplace: false,
        reason: expect.stringContaining("share of the marketplace lane"),
      }),
    ]);
  }, 120_000);

  it("a lane's time budget counts: a client whose work took its minute's worth gets no slot until time refills", async () => {
    const lanes = lanesOf((await newClient()).client.id);
    const { secondsPerMinute } = LANE_SHARES.marketplace;
    const first = await lanes.hold("marketplace", 1, 60_000);
    expect(first.slots).toBe(1);
    // The work took longer than the lane gives a client in a minute.
    await lanes.release(first.id, (secondsPerMinute + 6) * 1000);
    const refused = await lanes.hold("marketplace", 1, 60_000);
    expect(refused).toMatchObject({ slots: 0, retryAfterMs: expect.any(Number) });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    // Another client's budget is its own.
    expect((await lanesOf((await newClient()).client.id).hold("marketplace", 1, 60_000)).slots).toBe(1);
  });

  it("a client's lanes that do not take its jobs do not hold the batch: its messages go back to the queue", async () => {
    // Every client's lanes object is stuck: the hand-over never answers.
    const stuck = {
      ...env,
      CLIENT_LANES: {
        idFromName: (name: string) => name,
        get: () => ({ admit: () => new Promise(() => {}) }),
      },
    } as unknown as Env;
    const batch = createMessageBatch<JobMessage>("jobs", [
      { id: "stuck-1", timestamp: new Date(), attempts: 1, body: { kind: "publish", itemId: 999_999 } },
      { id: "ping-1", timestamp: new Date(), attempts: 1, body: { kind: "ping" } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, stuck);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual(["stuck-1"]);
    expect(result.explicitAcks).toEqual(["ping-1"]);
  }, 60_000);
});
