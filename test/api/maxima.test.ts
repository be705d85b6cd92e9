import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, eventually, expectEnvelope, twoClients } from "../harness/api";
import { createAd, createUser, SOFA_CATEGORY } from "../harness/data";

/**
 * Every batch-shaped write at its documented maximum (the OpenAPI maxItems, or the setting that bounds
 * it) is answered 200: D1 binds at most 100 parameters per statement, so a multi-row insert that is not
 * chunked fails on the large end only.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const image = (name: string) => ({ image: { url: `http://images.test/${name}` } });
const range = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i);

/** Marks ads live on a portal, as a placement that succeeded would. */
async function published(adIds: number[], portal: string) {
  await env.DB.prepare(
    `INSERT INTO ad_publications (ad_id, portal, active, remote_ad_id)
     SELECT value, ?, 1, value FROM json_each(?)`,
  )
    .bind(portal, JSON.stringify(adIds))
    .run();
}

async function adsOf(userId: number, count: number, overrides: Record<string, unknown> = {}) {
  const adIds: number[] = [];
  for (let i = 0; i < count; i += 10)
    adIds.push(
      ...(
        await Promise.all(
          range(Math.min(10, count - i)).map(() => createAd(key, userId, { categoryId: SOFA_CATEGORY, ...overrides })),
        )
      ).map((ad) => ad.adId),
    );
  return adIds;
}

describe("batch-shaped writes at their maximum", () => {
  it("PUT and POST /images/<adId>: 24 images (the default maxImages) and 100 (the largest maxImages)", async () => {
    const user = await createUser(key);
    const [ad, big] = await adsOf(user.userId, 2);
    const twentyFour = range(24).map(() => image("red.png"));
    expectEnvelope(await call("PUT", `/images/${ad}`, { key, body: { images: twentyFour } }), 200);
    expectEnvelope(await call("POST", `/images/${ad}`, { key, body: { images: twentyFour } }), 200);
    expectEnvelope(
      await call("POST", "/user/settings/", { key: internalKey, body: { userId: user.userId, maxImages: 100 } }),
      200,
    );
    const hundred = range(100).map(() => image("red.png"));
    expectEnvelope(await call("POST", `/images/${big}`, { key, body: { images: hundred } }), 200);
    const jobs = await env.DB.prepare(
      "SELECT ad_id, count(*) AS n FROM image_jobs WHERE ad_id IN (?, ?) GROUP BY ad_id",
    )
      .bind(ad, big)
      .all<{ ad_id: number; n: number }>();
    expect(Object.fromEntries(jobs.results.map((row) => [row.ad_id, row.n]))).toEqual({
      [ad as number]: 48,
      [big as number]: 100,
    });
  });

  it("POST /manufacturers/batch/ with publish over 60 ads live on two portals queues every update", async () => {
    const user = await createUser(key);
    const adIds = await adsOf(user.userId, 60);
    await published(adIds, "portal_a");
    await published(adIds, "portal_b");
    const manufacturer = await call("POST", "/manufacturers/", {
      key,
      body: {
        userId: user.userId,
        categoryId: SOFA_CATEGORY,
        brands: range(50).map((i) => `Merk ${i}`),
        manufacturerTradename: "Meubelfabriek B.V.",
        manufacturerAddress: "Roermondseweg 91, 5917 AB Venlo",
        manufacturerEmail: "info@example.nl",
      },
    });
    expectEnvelope(manufacturer, 200);
    const answer = await call("POST", "/manufacturers/batch/", {
      key,
      body: { manufacturerId: manufacturer.body.data.manufacturerId, userId: user.userId, publish: true },
    });
    expectEnvelope(answer, 200);
    // The update requests are turned into queued updates after the answer.
    await eventually(async () => {
      const requested = await env.DB.prepare(
        "SELECT count(*) AS n FROM queue_items WHERE action = 'update' AND ad_id IN (SELECT value FROM json_each(?))",
      )
        .bind(JSON.stringify(adIds))
        .first<{ n: number }>();
      return requested?.n === 120 ? true : undefined;
    }, "an update per ad and portal");
  });

  it("PATCH and DELETE /ads/batch with 100 ads", async () => {
    const user = await createUser(key);
    const adIds = await adsOf(user.userId, 100);
    expectEnvelope(
      await call("PATCH", "/ads/batch", { key, body: { userId: user.userId, adId: adIds, status: "archive" } }),
      200,
    );
    expectEnvelope(await call("DELETE", "/ads/batch", { key, body: { userId: user.userId, adId: adIds } }), 200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM ads WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("POST /publish/batch, POST /tasks/ and POST /bids/markasread with 1000 ids", async () => {
    const user = await createUser(key);
    const [adId] = await adsOf(user.userId, 1);
    const thousand = [adId as number, ...range(999, 900_000_000)];
    const publish = await call("POST", "/publish/batch", {
      key,
      body: { userId: user.userId, adId: thousand, portal: "website" },
    });
    expect(publish.status).toBe(200);
    expect(publish.body.data).toHaveLength(1000);
    const task = await call("POST", "/tasks/", {
      key,
      body: { userId: user.userId, portal: "portal_a", time: "09:00", enabled: true, adId: thousand },
    });
    expect(task.status).toBeLessThan(500);
    const bids = await call("POST", "/bids/markasread", {
      key,
      body: { userId: user.userId, portal: "portal_a", bidId: range(1000) },
    });
    expect(bids.status).toBeLessThan(500);
  });

  it("the reads and removals that take lists answer 200 at their maximum", async () => {
    const user = await createUser(key);
    const adIds = await adsOf(user.userId, 100);
    const ids = (n: number) => [...adIds, ...range(n - adIds.length, 900_000_000)];
    const today = new Date().toISOString().slice(0, 10);
    for (const [method, path, body] of [
      ["POST", "/status/", { userId: user.userId, adId: ids(1000) }],
      ["POST", "/imagestatus/", { userId: user.userId, adId: ids(1000) }],
      // (Statistics refuse an ad that does not exist: the user's 100, five times over.)
      ["POST", "/statistics/", { adId: range(5).flatMap(() => adIds), dateStart: today, dateEnd: today }],
      ["POST", "/groups/", { groupId: range(500) }],
      ["POST", "/attributes/", { categoryId: range(500, 9000) }],
      ["DELETE", "/images/batch", { userId: user.userId, adId: adIds }],
    ] as const) {
      const answer = await call(method, path, { key, body });
      expect(answer.status, `${method} ${path}: ${answer.body.errors.slice(0, 3)}`).toBe(200);
    }
  });
});
