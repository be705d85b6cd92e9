import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import type { JobAction } from "../../src/lib/vocabulary";
import { applyEvent, type JobEvent, queueJobs } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { call, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd } from "../harness/data";
import { runPublishJob, withoutMessages } from "../harness/jobs";
import { connectedSeller } from "../harness/marketplace";

/**
 * Every row of the state-machine table (docs/publishing.md): a job of each kind is queued (rows written, no message
 * sent, so nothing else moves it) and driven through events; after each, what a client reads in
 * /status/, /jobs/ and the wallet is compared with the table.
 */

let key: string;
let internalKey: string;
let userId: number;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  userId = await connectedSeller(key, internalKey, 1_000_000);
});

const quiet = withoutMessages();
const db = () => getDb(env.DB);
const COST = 250;

type Flags = Record<string, unknown>;
type Step = [JobEvent | "queued", { job: string; publish?: Flags; feature?: Flags; refunded?: boolean }];

async function portalStatus(adId: number) {
  const answer = await call("GET", `/status/${userId}/${adId}`, { key });
  const portal = answer.body.data[0]?.portals[0];
  return { publish: portal?.publish, feature: portal?.features ? portal?.features[0] : undefined };
}

/** An ad already live on portal_a (remoteAdId 55), for the kinds that need one. */
async function liveAd() {
  const ad = await createAd(key, userId, { title: "Bank die al live staat" });
  await env.DB.prepare(
    "INSERT INTO ad_publications (ad_id, portal, active, online, remote_ad_id, client_result, queue_result) VALUES (?, 'portal_a', 1, 1, 55, 1, 1)",
  )
    .bind(ad.adId)
    .run();
  return ad.adId as number;
}

async function run(kind: JobAction, steps: Step[]) {
  const adId =
    kind === "publish" ? (await createAd(key, userId, { title: "Bank voor de toestanden" })).adId : await liveAd();
  const [queued] = await queueJobs(jobContext(onTestShard(quiet)), [
    {
      adId,
      userId,
      portal: "portal_a",
      action: kind,
      feature: kind === "feature" ? "omhoogplaatsen" : null,
      images: true,
      cost: kind === "publish" || kind === "feature" ? COST : 0,
      payerId: userId,
      description: `${kind} ${adId}`,
    },
  ]);
  const itemId = queued?.jobId as number;
  const item = await env.DB.prepare(
    "SELECT id, user_id AS userId, ad_id AS adId, portal, action, feature FROM queue_items WHERE id = ?",
  )
    .bind(itemId)
    .first<{
      id: number;
      userId: number;
      adId: number;
      portal: "portal_a";
      action: JobAction;
      feature: string | null;
    }>();
  if (!item) throw new Error("no item");
  for (const [event, expected] of steps) {
    if (event !== "queued")
      await applyEvent(db(), item, event, {
        now: new Date().toISOString(),
        reason: "weigering van de portal",
        outcome: { remoteAdId: 77, online: true },
      });
    const status = await portalStatus(adId);
    const job = (await call("GET", `/jobs/${itemId}`, { key })).body.data;
    expect(job.state, `${kind} after ${event}`).toBe(expected.job);
    if (expected.publish) expect(status.publish, `${kind} after ${event}`).toMatchObject(expected.publish);
    if (expected.feature) expect(status.feature, `${kind} after ${event}`).toMatchObject(expected.feature);
    if (expected.refunded !== undefined) expect(job.refunded, `${kind} after ${event}`).toBe(expected.refunded);
  }
  return { itemId, adId };
}

/** Queues a free update or unpublish of a live ad, with no message sent. */
const queueChange = async (adId: number, action: "update" | "unpublish") => {
  const [queued] = await queueJobs(jobContext(onTestShard(quiet)), [
    {
      adId,
      userId,
      portal: "portal_a",
      action,
      images: action === "update",
      cost: 0,
      payerId: userId,
      description: "",
    },
  ]);
  return queued?.jobId as number;
};

const queuedPlacement = { pending: true, processing: false, error: false, errorReason: null, active: false };
const live = { active: true, online: true, remoteAdId: 55 };

describe("publishing state machine", () => {
  it("placement: queued → started → retrying → started → succeeded", async () => {
    const { itemId } = await run("publish", [
      ["queued", { job: "pending", publish: queuedPlacement }],
      ["started", { job: "processing", publish: { pending: true, processing: true } }],
      ["retrying", { job: "pending", publish: { pending: true, processing: false, error: false } }],
      ["started", { job: "processing", publish: { processing: true } }],
      [
        "succeeded",
        {
          job: "done",
          refunded: false,
          publish: {
            pending: false,
            processing: false,
            error: false,
            active: true,
            online: true,
            remoteAdId: 77,
            clientResult: true,
          },
        },
      ],
    ]);
    expect((await call("GET", `/jobs/${itemId}`, { key })).body.data).toMatchObject({ attempts: 2, cost: COST });
  });

  it("placement: failed shows the reason and refunds; cancelled refunds", async () => {
    await run("publish", [
      ["started", { job: "processing" }],
      [
        "failed",
        {
          job: "error",
          refunded: true,
          publish: {
            pending: false,
            processing: false,
            error: true,
            errorReason: "weigering van de portal",
            active: false,
            clientResult: false,
          },
        },
      ],
    ]);
    await run("publish", [
      [
        "cancelled",
        { job: "cancelled", refunded: true, publish: { pending: false, processing: false, active: false } },
      ],
    ]);
  });

  it("update: succeeded keeps the listing; failed leaves it live with the reason; cancelled", async () => {
    await run("update", [
      ["queued", { job: "pending", publish: { ...live, pending: true, processing: false } }],
      ["started", { job: "processing", publish: { ...live, processing: true } }],
      ["retrying", { job: "pending", publish: { ...live, pending: true, processing: false } }],
      ["started", { job: "processing", publish: { ...live, processing: true } }],
      ["succeeded", { job: "done", publish: { ...live, pending: false, processing: false, error: false } }],
    ]);
    await run("update", [
      ["started", { job: "processing" }],
      [
        "failed",
        {
          job: "error",
          publish: { ...live, pending: false, processing: false, error: true, errorReason: "weigering van de portal" },
        },
      ],
    ]);
    await run("update", [["cancelled", { job: "cancelled", publish: { ...live, pending: false, processing: false } }]]);
  });

  it("unpublish: succeeded takes the listing down; failed leaves it live with the reason", async () => {
    await run("unpublish", [
      ["queued", { job: "pending", publish: { ...live, pending: true } }],
      ["started", { job: "processing", publish: { processing: true } }],
      ["retrying", { job: "pending", publish: { ...live, pending: true, processing: false } }],
      ["started", { job: "processing", publish: { processing: true } }],
      ["succeeded", { job: "done", publish: { pending: false, processing: false, active: false, online: false } }],
    ]);
    await run("unpublish", [
      ["started", { job: "processing" }],
      ["failed", { job: "error", publish: { ...live, pending: false, processing: false, error: true } }],
    ]);
  });

  it("feature: its own flags move; the publication's never do", async () => {
    const untouched = { ...live, pending: false, processing: false, error: false };
    await run("feature", [
      ["queued", { job: "pending", feature: { pending: true, error: false, active: false }, publish: untouched }],
      ["started", { job: "processing", feature: { pending: true }, publish: untouched }],
      ["retrying", { job: "pending", feature: { pending: true }, publish: untouched }],
      ["started", { job: "processing", publish: untouched }],
      [
        "succeeded",
        { job: "done", refunded: false, feature: { pending: false, active: true, error: false }, publish: untouched },
      ],
    ]);
    await run("feature", [
      [
        "failed",
        { job: "error", refunded: true, feature: { pending: false, error: true, active: false }, publish: untouched },
      ],
    ]);
    await run("feature", [
      ["cancelled", { job: "cancelled", refunded: true, feature: { pending: false }, publish: untouched }],
    ]);
  });

  it("an event from a state it does not leave changes nothing", async () => {
    const { itemId, adId } = await run("publish", [["queued", { job: "pending" }]]);
    const item = { id: itemId, userId, adId, portal: "portal_a" as const, action: "publish" as const, feature: null };
    const now = new Date().toISOString();
    expect(await applyEvent(db(), item, "succeeded", { now, outcome: { remoteAdId: 9 } })).toBeNull();
    expect(await applyEvent(db(), item, "retrying", { now })).toBeNull();
    expect((await portalStatus(adId)).publish).toMatchObject(queuedPlacement);
    expect(await applyEvent(db(), item, "cancelled", { now })).toMatchObject({ status: "cancelled" });
    expect(await applyEvent(db(), item, "started", { now })).toBeNull();
    expect(await applyEvent(db(), item, "failed", { now, reason: "te laat" })).toBeNull();
    expect((await portalStatus(adId)).publish).toMatchObject({ pending: false, error: false });
    const refunds = await env.DB.prepare(
      "SELECT count(*) AS n FROM wallet_entries WHERE queue_item_id = ? AND kind = 'refund'",
    )
      .bind(itemId)
      .first<{ n: number }>();
    expect(refunds?.n).toBe(1);
  });

  it("an older job's events do not move the flags of the publication's newer job", async () => {
    const adId = await liveAd();
    const older = { itemId: await queueChange(adId, "update") };
    const olderJob = {
      id: older?.itemId as number,
      userId,
      adId,
      portal: "portal_a" as const,
      action: "update" as const,
      feature: null,
    };
    await applyEvent(db(), olderJob, "started", { now: new Date().toISOString() });
    const newer = { itemId: await queueChange(adId, "unpublish") };
    await applyEvent(db(), olderJob, "failed", { now: new Date().toISOString(), reason: "oud" });
    expect((await portalStatus(adId)).publish).toMatchObject({
      pending: true,
      error: false,
      queueItemId: newer?.itemId,
    });
  });

  it("an update superseded by a newer change of the same listing is cancelled when its turn comes", async () => {
    const adId = await liveAd();
    const update = { itemId: await queueChange(adId, "update") };
    const unpublish = { itemId: await queueChange(adId, "unpublish") };
    await runPublishJob(onTestShard(), update?.itemId as number);
    const job = (await call("GET", `/jobs/${update?.itemId}`, { key })).body.data;
    expect(job).toMatchObject({ state: "cancelled", lastError: "superseded", attempts: 1 });
    // The publication follows the newer job, untouched by the cancelled one.
    expect((await portalStatus(adId)).publish).toMatchObject({
      ...live,
      pending: true,
      queueItemId: unpublish?.itemId,
    });
  });
});
