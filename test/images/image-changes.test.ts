// Changing an ad's images: reordering, rotation and removal, their status, and tenant isolation.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, newClient, twoClients } from "../harness/api";
import { createAd, createUser } from "../harness/data";
import { imageInfo, type SellerImages, sellerImages, source } from "../harness/images";

let key: string;
let userId: number;
let settled: SellerImages["settled"];
let adWithImages: SellerImages["adWithImages"];

beforeAll(async () => {
  ({ key } = await twoClients());
  userId = (await createUser(key)).userId;
  ({ settled, adWithImages } = sellerImages(key, userId));
});

describe("reordering, rotation and removal", () => {
  const order = async (adId: number) =>
    Promise.all(
      (await call("GET", `/images/${adId}`, { key })).body.data.images.map(
        async (i: { counter: number; image: { url: string } }) => {
          const info = await imageInfo(i.image.url);
          return `${i.counter}:${info?.width}x${info?.height}`;
        },
      ),
    );

  it("switches, shifts and removes by counter, keeping counters 1..n", async () => {
    const adId = await adWithImages("red.png", "blue.jpg", "green.png");
    expect(await order(adId)).toEqual(["1:48x24", "2:40x30", "3:30x60"]);

    const switched = await call("POST", "/imageswitch/", { key, body: { adId, images: [1, 3] } });
    expectEnvelope(switched, 200);
    expect(switched.body.data.map((i: { counter: number }) => i.counter)).toEqual([1, 2, 3]);
    expect(await order(adId)).toEqual(["1:30x60", "2:40x30", "3:48x24"]);

    expectEnvelope(await call("POST", "/imageshift/", { key, body: { adId, images: [3, 1] } }), 200);
    expect(await order(adId)).toEqual(["1:48x24", "2:30x60", "3:40x30"]);
    expectEnvelope(await call("POST", "/imageshift/", { key, body: { adId, images: [1, 3] } }), 200);
    expect(await order(adId)).toEqual(["1:30x60", "2:40x30", "3:48x24"]);
    expectEnvelope(await call("POST", "/imageshift/", { key, body: { adId, images: [3, 2] } }), 200);
    expect(await order(adId)).toEqual(["1:30x60", "2:48x24", "3:40x30"]);

    const removed = await call("DELETE", "/images/", { key, body: { adId, images: [2] } });
    expectEnvelope(removed, 200);
    expect(removed.body.data.images.map((i: { counter: number }) => i.counter)).toEqual([1, 2]);
    expect(await order(adId)).toEqual(["1:30x60", "2:40x30"]);

    const bad = await call("POST", "/imageswitch/", { key, body: { adId, images: [1, 7] } });
    expectEnvelope(bad, 400);
    expect(bad.body.errors).toEqual(["images: the ad has no image 7"]);
    expectEnvelope(await call("POST", "/imageshift/", { key, body: { adId, images: [1, 5] } }), 400);
  });

  it("adds new images after reordered ones", async () => {
    const adId = await adWithImages("red.png", "blue.jpg");
    await call("POST", "/imageswitch/", { key, body: { adId, images: [1, 2] } });
    await call("PUT", `/images/${adId}`, { key, body: { images: [source("green.png")] } });
    await settled(adId);
    expect(await order(adId)).toEqual(["1:40x30", "2:48x24", "3:30x60"]);
  });

  it("rotates pixels of original and thumbnail, swapping width and height for 90 and 270", async () => {
    const adId = await adWithImages("red.png", "blue.jpg");
    const before = (await call("GET", `/images/${adId}`, { key })).body.data.images;
    const thumbBefore = await imageInfo(defined(before[0]).thumbnail.url);
    const rotated = await call("POST", "/imagerotate/", { key, body: { adId, images: [1], rotate: 90 } });
    expectEnvelope(rotated, 200);
    expect(await order(adId)).toEqual(["1:24x48", "2:40x30"]);
    const thumbAfter = await imageInfo(defined(rotated.body.data[0]).thumbnail.url);
    expect([thumbAfter?.width, thumbAfter?.height]).toEqual([thumbBefore?.height, thumbBefore?.width]);
    // The old files are gone; the new ones have new keys.
    expect(await env.MEDIA.head(new URL(defined(before[0]).image.url).pathname.replace("/media/", ""))).toBeNull();
    await call("POST", "/imagerotate/", { key, body: { adId, images: [1, 2], rotate: 180 } });
    expect(await order(adId)).toEqual(["1:24x48", "2:40x30"]);
    expectEnvelope(await call("POST", "/imagerotate/", { key, body: { adId, images: [1], rotate: 45 } }), 400);
  });

  it("removes all images of an ad, of several ads, and with the ad itself", async () => {
    const first = await adWithImages("red.png");
    const second = await adWithImages("blue.jpg");
    const third = await adWithImages("green.png");
    const gone = await call("DELETE", `/images/${first}`, { key });
    expectEnvelope(gone, 200);
    expect(gone.body.data).toBe(false);
    expect((await env.MEDIA.list({ prefix: `images/${first}/` })).objects).toHaveLength(0);

    expectEnvelope(await call("DELETE", "/images/batch/", { key, body: { userId, adId: [second] } }), 200);
    expect((await env.MEDIA.list({ prefix: `images/${second}/` })).objects).toHaveLength(0);
    expect((await call("GET", `/ads/?adId=${second}`, { key })).body.data[0]?.images).toBe(false);

    expectEnvelope(await call("DELETE", `/ads/${third}`, { key }), 200);
    expect((await env.MEDIA.list({ prefix: `images/${third}/` })).objects).toHaveLength(0);
  });

  it("requests an update of a published ad when its images change (autoupdate)", async () => {
    const adId = await adWithImages("red.png", "blue.jpg");
    await env.DB.prepare("INSERT INTO ad_publications (ad_id, portal, active) VALUES (?, 'portal_b', 1)")
      .bind(adId)
      .run();
    const updates = (count: number) =>
      eventually(async () => {
        const rows = await env.DB.prepare(
          "SELECT portal, action, status FROM queue_items WHERE ad_id = ? AND action = 'update' ORDER BY id",
        )
          .bind(adId)
          .all<{ portal: string; action: string; status: string }>();
        const ended = rows.results.every((row) => row.status !== "pending" && row.status !== "processing");
        return rows.results.length === count && ended ? rows.results : undefined;
      }, `${count} updates queued and ended`);
    // The switch is an update of the listing.
    await call("POST", "/imageswitch/", { key, body: { adId, images: [1, 2] } });
    await updates(1);
    // An image added without autoupdate asks for none; with it, one.
    await call("PUT", `/images/${adId}`, { key, body: { images: [source("green.png")], autoupdate: false } });
    await settled(adId);
    await call("PUT", `/images/${adId}`, { key, body: { images: [source("green.png")] } });
    await settled(adId);
    expect((await updates(2)).map(({ portal, action }) => ({ portal, action }))).toEqual([
      { portal: "portal_b", action: "update" },
      { portal: "portal_b", action: "update" },
    ]);
  });

  it("deletes the image files of an anonymised user", async () => {
    const user = await createUser(key, { externalUserId: 44 });
    const ad = await createAd(key, user.userId);
    await call("PUT", `/images/${ad.adId}`, { key, body: { images: [source("red.png")] } });
    await eventually(
      async () => ((await env.MEDIA.list({ prefix: `images/${ad.adId}/` })).objects.length === 2 ? true : undefined),
      "the image and its thumbnail stored",
    );
    expectEnvelope(await call("DELETE", `/users/${user.userId}`, { key }), 200);
    expect((await env.MEDIA.list({ prefix: `images/${ad.adId}/` })).objects).toHaveLength(0);
  });
});

describe("image status", () => {
  it("lists the user's jobs, by ad and by POST", async () => {
    const adId = await adWithImages("red.png");
    const all = await call("GET", `/imagestatus/${userId}`, { key });
    expect(all.body.data.some((j: { adId: number }) => j.adId === adId)).toBe(true);
    const posted = await call("POST", "/imagestatus/", { key, body: { userId, adId: [adId] } });
    expect(posted.body.data).toHaveLength(1);
    expect(posted.body.data[0]).toMatchObject({
      adId,
      done: true,
      result: true,
      created: expect.stringMatching(/^\d{4}-/),
    });
  });
});

describe("image status, a page at a time", () => {
  it("pages the GET forms like every list, with their total: no job left out past a page", async () => {
    const adId = await adWithImages("red.png", "blue.jpg", "green.png");
    const pages = await Promise.all(
      [1, 2].map((page) => call("GET", `/imagestatus/${userId}/${adId}?itemsPerPage=2&page=${page}`, { key })),
    );
    expect(pages.map((p) => [p.body.totalItems, p.body.page, p.body.data.length])).toEqual([
      [3, 1, 2],
      [3, 2, 1],
    ]);
    const ids = pages.flatMap((p) => p.body.data.map((j: { jobId: number }) => j.jobId));
    expect(new Set(ids).size).toBe(3);
    const all = await call("GET", `/imagestatus/${userId}?itemsPerPage=1000`, { key });
    expect(all.body.totalItems).toBe(all.body.data.length);
    expectError(await call("GET", `/imagestatus/${userId}?itemsPerPage=1001`, { key }), "validation_failed");
  });
});

describe("tenant isolation and random bodies", () => {
  it("answers 404 to another client on every image endpoint", async () => {
    const adId = await adWithImages("red.png");
    const { key: otherKey } = await newClient({ partner: true });
    const calls: [string, string, unknown?][] = [
      ["GET", `/images/${adId}`],
      ["POST", `/images/${adId}`, { images: [source("red.png")] }],
      ["PUT", `/images/${adId}`, { images: [source("red.png")] }],
      ["DELETE", `/images/${adId}`],
      ["DELETE", "/images/", { adId, images: [1] }],
      ["DELETE", "/images/batch/", { userId, adId: [adId] }],
      ["POST", "/imageswitch/", { adId, images: [1, 1] }],
      ["POST", "/imageshift/", { adId, images: [1, 1] }],
      ["POST", "/imagerotate/", { adId, images: [1], rotate: 90 }],
      ["GET", `/imagestatus/${userId}`],
      ["GET", `/imagestatus/${userId}/${adId}`],
      ["POST", "/imagestatus/", { userId, adId: [adId] }],
    ];
    for (const [method, path, body] of calls) {
      expect((await call(method, path, { key: otherKey, body })).status, `${method} ${path}`).toBe(404);
    }
    expect((await call("GET", `/images/${adId}`, { key })).body.data.images).toHaveLength(1);
  });

  it("never answers a 5xx to random bodies", async () => {
    const adId = await adWithImages("red.png");
    const fields = fc.constantFrom("adId", "userId", "images", "rotate", "autoupdate", "image", "url", "path");
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fields, fc.oneof(fc.jsonValue(), fc.constant(adId), fc.constant([1, 2]))),
    );
    const writes: [string, string][] = [
      ["PUT", `/images/${adId}`],
      ["DELETE", "/images/"],
      ["DELETE", "/images/batch/"],
      ["POST", "/imageswitch/"],
      ["POST", "/imageshift/"],
      ["POST", "/imagerotate/"],
      ["POST", "/imagestatus/"],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writes), body, async ([method, path], payload) => {
        const answer = await call(method, path, { key, body: payload });
        expect(answer.status).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
      }),
      { numRuns: 100 },
    );
  });
});
