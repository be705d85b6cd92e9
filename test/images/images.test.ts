import { createExecutionContext, env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { mediaBaseOf } from "../../src/lib/media";
import { runImageJob } from "../../src/services/images";
import { jobContext } from "../../src/services/shared";
import { call, defined, eventually, expectEnvelope, expectError, newClient, twoClients } from "../harness/api";
import { createAd, createUser } from "../harness/data";

let key: string;
let internalKey: string;
let userId: number;

const ORIGIN = "http://images.test";
const source = (name: string) => ({ image: { url: `${ORIGIN}/${name}` } });

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  userId = (await createUser(key)).userId;
});

/** Waits until every image job of the ad is done (the queue consumer runs beside the tests). */
async function settled(adId: number) {
  for (let i = 0; i < 100; i += 1) {
    const status = await call("GET", `/imagestatus/${userId}/${adId}`, { key });
    if (status.body.data.length > 0 && status.body.data.every((job: { done: boolean }) => job.done))
      return status.body.data;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("image jobs did not finish");
}

async function imageInfo(url: string) {
  const object = await env.MEDIA.get(new URL(url).pathname.replace(/^\/media\//, ""));
  if (!object) return null;
  const info = await env.IMAGES.info(object.body);
  return {
    ...(info as { width: number; height: number; format: string }),
    contentType: object.httpMetadata?.contentType,
  };
}

async function adWithImages(...names: string[]) {
  const ad = await createAd(key, userId);
  const answer = await call("PUT", `/images/${ad.adId}`, { key, body: { images: names.map(source) } });
  expectEnvelope(answer, 200);
  await settled(ad.adId);
  return ad.adId as number;
}

describe("ingestion", () => {
  it("downloads through the queue consumer into R2, with thumbnails, in request order", async () => {
    const ad = await createAd(key, userId);
    const answer = await call("POST", `/images/${ad.adId}`, {
      key,
      body: { adId: ad.adId, images: [source("red.png"), source("blue.jpg"), { image: { path: "green.png" } }] },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual({ adId: ad.adId, images: [] });

    const jobs = await settled(ad.adId);
    expect(jobs.map((j: { result: boolean; images: unknown }) => [j.result, j.images])).toEqual([
      [true, [{ URL: `${ORIGIN}/red.png`, path: "" }]],
      [true, [{ URL: `${ORIGIN}/blue.jpg`, path: "" }]],
      [true, [{ URL: "", path: "green.png" }]],
    ]);
    expect(jobs[0]).toMatchObject({ adId: ad.adId, processing: false, done: true, reason: "" });

    const images = (await call("GET", `/images/${ad.adId}`, { key })).body.data.images;
    expect(images.map((i: { counter: number }) => i.counter)).toEqual([1, 2, 3]);
    expect(images[0]?.image.url).toMatch(/^http:\/\/api\.test\/media\/images\/\d+\/[\w-]{24}-original\.png$/);
    const [red, blue, green] = await Promise.all(images.map((i: { image: { url: string } }) => imageInfo(i.image.url)));
    expect(red).toMatchObject({ width: 48, height: 24, contentType: "image/png" });
    expect(blue).toMatchObject({ width: 40, height: 30, contentType: "image/jpeg" });
    expect(green).toMatchObject({ width: 30, height: 60 });
    const thumb = await imageInfo(defined(images[0]).thumbnail.url);
    expect(thumb?.width).toBeLessThan(48);
    expect(thumb?.height).toBeLessThan(24);

    // The media route serves them with their content type and cache headers.
    const { exports } = await import("cloudflare:workers");
    const served = await exports.default.fetch(new Request(defined(images[1]).image.url));
    expect(served.status).toBe(200);
    expect(served.headers.get("Content-Type")).toBe("image/jpeg");
    expect(served.headers.get("Cache-Control")).toContain("immutable");
    const missing = await exports.default.fetch(new Request("http://api.test/media/images/1/nope.png"));
    expect(missing.status).toBe(404);

    // Ads show the images; simple shows the primary one.
    const full = await call("GET", `/ads/?adId=${ad.adId}`, { key });
    expect(full.body.data[0]?.images).toEqual(images);
    const simple = await call("GET", `/ads/?adId=${ad.adId}&simple=1`, { key });
    expect(simple.body.data[0]?.images).toEqual([images[0]]);
  });

  it.each([
    ["missing.png", "download failed with HTTP 404"],
    ["notes.txt", "not a JPEG, PNG, WebP or GIF image"],
    ["huge.png", "larger than 200000 bytes"],
    ["broken.png", "could not be read as an image"],
  ])("fails %s with a reason, storing nothing and leaving the other images alone", async (name, reason) => {
    const adId = await adWithImages("red.png");
    const objectsBefore = (await env.MEDIA.list({ prefix: `images/${adId}/` })).objects.length;
    await call("PUT", `/images/${adId}`, { key, body: { images: [source(name)] } });
    const jobs = await settled(adId);
    expect(jobs[1]).toMatchObject({ done: true, result: false, reason });
    expect((await env.MEDIA.list({ prefix: `images/${adId}/` })).objects.length).toBe(objectsBefore);
    expect((await call("GET", `/images/${adId}`, { key })).body.data.images).toHaveLength(1);
  });

  it("hands out URLs on the request's origin when no public base is configured", async () => {
    const adId = await adWithImages("red.png");
    // As npm run dev configures it: no public base, the server's own address for work outside a request.
    const local = {
      ...env,
      MEDIA_BASE_URL: "",
      LOCAL_MEDIA_BASE: "http://localhost:8787/media/",
      WEBSITE_URL: "",
    } as Env;
    const on =
      (origin: string) =>
      (path: string, init: RequestInit = {}) =>
        worker.fetch(
          new Request(`${origin}/rest/v1${path}`, {
            ...init,
            headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          }) as Parameters<typeof worker.fetch>[0],
          local,
          createExecutionContext(),
        );
    const onPort = on("http://localhost:9000");
    type Images = { data: { images: { image: { url: string } }[] } };
    const images = await (await onPort(`/images/${adId}`)).json<Images>();
    expect(images.data.images[0]?.image.url).toMatch(/^http:\/\/localhost:9000\/media\/images\//);
    // Called on 127.0.0.1, the URLs say 127.0.0.1 too; work outside a request uses the server's address.
    const onLoopback = await (await on("http://127.0.0.1:9000")(`/images/${adId}`)).json<Images>();
    expect(onLoopback.data.images[0]?.image.url).toMatch(/^http:\/\/127\.0\.0\.1:9000\/media\/images\//);
    expect(mediaBaseOf(local)).toBe("http://localhost:8787/media/");
    const link = await (
      await onPort("/auth/link/generate/", { method: "POST", body: JSON.stringify({ userId }) })
    ).json<{ data: { url: string; accesstoken: string } }>();
    expect(link.data.url).toBe(`http://localhost:9000/login/${link.data.accesstoken}`);
    // A configured base wins again.
    const configured = await call("GET", `/images/${adId}`, { key });
    expect(configured.body.data.images[0]?.image.url).toMatch(/^http:\/\/api\.test\/media\//);
  });

  it("follows a redirect to an image", async () => {
    const adId = await adWithImages("moved.png");
    expect((await call("GET", `/images/${adId}`, { key })).body.data.images).toHaveLength(1);
  });

  it("runs a redelivered job once", async () => {
    const ad = await createAd(key, userId);
    const job = await env.DB.prepare(
      "INSERT INTO image_jobs (ad_id, user_id, source_url) VALUES (?, ?, ?) RETURNING id",
    )
      .bind(ad.adId, userId, `${ORIGIN}/red.png`)
      .first<{ id: number }>();
    await Promise.all([
      runImageJob(jobContext(env), { jobId: job?.id as number }),
      runImageJob(jobContext(env), { jobId: job?.id as number }),
    ]);
    await runImageJob(jobContext(env), { jobId: job?.id as number });
    expect((await call("GET", `/images/${ad.adId}`, { key })).body.data.images).toHaveLength(1);
    expect((await env.MEDIA.list({ prefix: `images/${ad.adId}/` })).objects).toHaveLength(2);
  });
});

describe("limits", () => {
  it("refuses a request that would pass maxImages whole, adding nothing", async () => {
    const user = await createUser(key, { externalUserId: 31 });
    await call("POST", "/user/settings/", { key: internalKey, body: { userId: user.userId, maxImages: 3 } });
    const ad = await createAd(key, user.userId);
    expectEnvelope(
      await call("PUT", `/images/${ad.adId}`, { key, body: { images: [source("red.png"), source("red.png")] } }),
      200,
    );
    const refused = await call("PUT", `/images/${ad.adId}`, {
      key,
      body: { images: [source("blue.jpg"), source("blue.jpg")] },
    });
    expectError(refused, "max_images_reached");
    expect(refused.body.errors).toEqual([
      "images: the ad may have at most 3 images (maxImages); it has 2 and 2 were sent",
    ]);
    const jobs = await env.DB.prepare("SELECT count(*) AS n FROM image_jobs WHERE ad_id = ?")
      .bind(ad.adId)
      .first<{ n: number }>();
    expect(jobs?.n).toBe(2);
    // Concurrent requests cannot pass the limit either.
    const other = await createAd(key, user.userId);
    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        call("PUT", `/images/${other.adId}`, { key, body: { images: [source("red.png")] } }),
      ),
    );
    expect(racing.filter((a) => a.status === 200)).toHaveLength(3);
    expect(racing.filter((a) => a.status === 409)).toHaveLength(2);
    // Replacing counts only the new images.
    expectEnvelope(
      await call("POST", `/images/${ad.adId}`, {
        key,
        body: { images: [source("blue.jpg"), source("blue.jpg"), source("blue.jpg")] },
      }),
      200,
    );
  });

  it.each([
    [{ images: [] }, "images: must have at least 1 items"],
    [{ images: [{ image: {} }] }, "images[0].image: give either url or path"],
    [{ images: [{ image: { url: "ftp://x/y.png" } }] }, "images[0].image.url: must be an http or https URL"],
    [
      { images: [{ image: { path: "../etc/passwd" } }] },
      "images[0].image.path: must stay below the media origin: no . or .. segments, backslashes, schemes or hosts",
    ],
    [{ adId: 1, images: [{ image: { path: "a.png" } }] }, "adId: must match the path ("],
  ])("refuses %j", async (body, message) => {
    const ad = await createAd(key, userId);
    const answer = await call("PUT", `/images/${ad.adId}`, { key, body });
    expectEnvelope(answer, 400);
    expect(answer.body.errors[0]).toMatch(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
  });
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
    await call("POST", "/imageswitch/", { key, body: { adId, images: [1, 2] } });
    await call("PUT", `/images/${adId}`, { key, body: { images: [source("green.png")], autoupdate: false } });
    await settled(adId);
    await call("PUT", `/images/${adId}`, { key, body: { images: [source("green.png")] } });
    await settled(adId);
    // Each change became a queued update of the listing (the switch, then the autoupdated addition).
    const updates = await eventually(async () => {
      const rows = await env.DB.prepare("SELECT portal, action FROM queue_items WHERE ad_id = ? AND action = 'update'")
        .bind(adId)
        .all();
      return rows.results.length >= 2 ? rows.results : undefined;
    }, "the queued updates");
    expect(updates).toEqual([
      { portal: "portal_b", action: "update" },
      { portal: "portal_b", action: "update" },
    ]);
  });

  it("deletes the image files of an anonymised user", async () => {
    const user = await createUser(key, { externalUserId: 44 });
    const ad = await createAd(key, user.userId);
    await call("PUT", `/images/${ad.adId}`, { key, body: { images: [source("red.png")] } });
    for (let i = 0; i < 100; i += 1) {
      if ((await env.MEDIA.list({ prefix: `images/${ad.adId}/` })).objects.length === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
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
