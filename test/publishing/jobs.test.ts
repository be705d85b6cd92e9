import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, newClient, twoClients } from "../harness/api";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { connectedSeller, walletBalance } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const job = (id: number, apiKey = key) => call("GET", `/jobs/${id}`, { key: apiKey });
const finished = (id: number) =>
  eventually(async () => {
    const answer = await job(id);
    return ["done", "error", "cancelled"].includes(answer.body.data.state) ? answer.body.data : undefined;
  }, `job ${id} to finish`);

describe("jobs", () => {
  it("a refused placement shows the portal's reason in /status/ and /jobs/, and is refunded", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Verboden [reject] brommer" });
    const queued = await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    expectEnvelope(queued, 200);
    const id = Number(queued.headers.get("Location")?.split("/").pop());
    const failed = await finished(id);
    expect(failed).toMatchObject({
      queueItemId: id,
      userId,
      adId: ad.adId,
      portal: "portal_a",
      kind: "placement",
      feature: null,
      state: "error",
      attempts: 1,
      lastError: "rejected by portal",
      cost: ad.prices.portal_a[0]?.priceTotal,
      refunded: true,
      retryOf: null,
    });
    expect(failed.created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const status = await call("GET", `/status/${userId}/${ad.adId}`, { key });
    expect(status.body.data[0]?.portals[0]?.publish).toMatchObject({
      error: true,
      errorReason: "rejected by portal",
      queueItemId: id,
      active: false,
    });
    const listed = await call("GET", `/ads/?adId=${ad.adId}`, { key });
    expect(listed.body.data[0]?.portals[0]?.publish.errorReason).toBe("rejected by portal");
    expect(await walletBalance(key, userId)).toBe(10_000);
  });

  it("publish, update, unpublish and feature name their jobs in Job-Ids (and the first in Location), body data: []", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const { adId } = await createAd(key, userId);
    const jobIdsOf = (answer: { headers: Headers; body: unknown }) =>
      defined(answer.headers.get("Job-Ids"), `Job-Ids of ${JSON.stringify(answer.body)}`)
        .split(",")
        .map(Number);
    const placed = await call("POST", "/publish/", { key, body: { userId, adId, portal: "portal_a" } });
    expectEnvelope(placed, 200);
    expect(placed.body.data).toEqual([]);
    const [placement] = jobIdsOf(placed);
    expect(placed.headers.get("Location")).toBe(`/rest/v1/jobs/${placement}`);
    // A repeat while the job is open names the same job.
    expect(jobIdsOf(await call("POST", "/publish/", { key, body: { userId, adId, portal: "portal_a" } }))).toEqual([
      placement,
    ]);
    await finished(defined(placement));
    const feature = await call("POST", "/features/", {
      key,
      body: { adId, portal: "portal_a", feature: "omhoogplaatsen" },
    });
    const [featureJob] = jobIdsOf(feature);
    expect((await call("GET", `/jobs/${featureJob}`, { key })).body.data).toMatchObject({ kind: "feature" });
    const updated = jobIdsOf(await call("PUT", "/publish/", { key, body: { userId, adId, portal: "portal_a" } }));
    expect((await call("GET", `/jobs/${updated[0]}`, { key })).body.data).toMatchObject({ kind: "update" });
    const down = await call("DELETE", "/publish/", { key, body: { userId, adId, portal: "portal_a" } });
    expect((await call("GET", `/jobs/${jobIdsOf(down)[0]}`, { key })).body.data).toMatchObject({ kind: "unpublish" });
  });

  it("lists with filters and paging, per client; internal clients see every user's", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000);
    const ads = [];
    for (const title of ["Eerste bank", "Tweede bank", "Derde [reject] bank"])
      ads.push(await createAd(key, userId, { title }));
    const batch = await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: ads.map((a) => a.adId), portal: "portal_a" },
    });
    const ids = batch.body.data.map((o) => defined(o.queueItemId));
    expect(ids.every((id: unknown) => typeof id === "number")).toBe(true);
    for (const id of ids) await finished(id);

    const all = await call("GET", `/jobs/?userId=${userId}`, { key });
    expectEnvelope(all, 200);
    expect(all.body).toMatchObject({ totalItems: 3, totalInSet: 3, page: 1, itemsPerPage: 25 });
    expect(all.body.data.map((j: { queueItemId: number }) => j.queueItemId)).toEqual([...ids].reverse());
    const failed = await call("GET", `/jobs/?userId=${userId}&state=error`, { key });
    expect(failed.body.data.map((j: { adId: number }) => j.adId)).toEqual([ads[2]?.adId]);
    const onAd = await call("GET", `/jobs/?adId=${ads[0]?.adId}&kind=placement&portal=portal_a`, { key });
    expect(onAd.body.data).toHaveLength(1);
    const paged = await call("GET", `/jobs/?userId=${userId}&itemsPerPage=2&page=2`, { key });
    expect(paged.body).toMatchObject({ totalItems: 3, totalInSet: 1 });
    expectEnvelope(await call("GET", "/jobs/?state=stuck", { key }), 400);
    expectEnvelope(await call("GET", "/jobs/?itemsPerPage=501", { key }), 400);

    // Another client sees none of it.
    const other = await newClient({ partner: true });
    expectEnvelope(await job(defined(ids[0]), other.key), 404);
    expectEnvelope(await call("GET", `/jobs/?userId=${userId}`, { key: other.key }), 404);
    const theirs = await call("GET", "/jobs/", { key: other.key });
    expect(theirs.body.totalItems).toBe(0);
    // An operator looks across users for failed items.
    const operator = await call("GET", "/jobs/?state=error&itemsPerPage=500", { key: internalKey });
    expect(operator.body.data.some((j: { queueItemId: number }) => j.queueItemId === ids[2])).toBe(true);
    expectEnvelope(await job(99_999_999), 404);
  });

  it("retries a failed job as a new one, charged again because the first was refunded", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Eerst geweigerd [reject]" });
    const price = ad.prices.portal_a[0]?.priceTotal as number;
    const queued = await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    const id = Number(queued.headers.get("Location")?.split("/").pop());
    await finished(id);
    expect(await walletBalance(key, userId)).toBe(10_000);

    // The seller fixes the title; the operator retries.
    expectEnvelope(await call("PUT", "/ads/", { key, body: { adId: ad.adId, title: "Nu wel toegestaan" } }), 200);
    const retried = await call("POST", `/jobs/${id}/retry`, { key });
    expectEnvelope(retried, 200);
    // Read back once handed to the lanes, which start it at once: pending, or already under way.
    expect(retried.body.data).toMatchObject({
      kind: "placement",
      state: expect.stringMatching(/^(pending|processing|done)$/),
      retryOf: id,
      cost: price,
    });
    expect(retried.headers.get("Location")).toBe(`/rest/v1/jobs/${retried.body.data.queueItemId}`);
    expect(await walletBalance(key, userId)).toBe(10_000 - price);
    expect(await finished(retried.body.data.queueItemId)).toMatchObject({ state: "done", refunded: false });
    const status = await call("GET", `/status/${userId}/${ad.adId}`, { key });
    expect(status.body.data[0]?.portals[0]?.publish).toMatchObject({
      active: true,
      online: true,
      error: false,
      errorReason: null,
    });

    const again = await call("POST", `/jobs/${retried.body.data.queueItemId}/retry`, { key });
    expectError(again, "job_not_retryable");
    expect(again.body.errors).toEqual([
      `queueItemId: only a failed job can be retried; job ${retried.body.data.queueItemId} is done`,
    ]);
    expectError(await call("POST", `/jobs/${id}/retry`, { key: (await newClient()).key }), "job_not_found");
    const refs = await env.DB.prepare("SELECT DISTINCT external_ref FROM queue_items WHERE ad_id = ?")
      .bind(ad.adId)
      .all();
    expect(refs.results).toHaveLength(1);
  });
});
