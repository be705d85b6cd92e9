// Image ingestion through the queue into R2, and the limits of an image request.
import { createExecutionContext, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { mediaBaseOf } from "../../src/lib/media";
import { runImageJob } from "../../src/services/images";
import { jobContext } from "../../src/services/shared";
import { call, defined, expectEnvelope, expectError, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, createUser } from "../harness/data";
import { imageInfo, IMAGE_ORIGIN as ORIGIN, type SellerImages, sellerImages, source } from "../harness/images";

let key: string;
let internalKey: string;
let userId: number;
let settled: SellerImages["settled"];
let adWithImages: SellerImages["adWithImages"];

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  userId = (await createUser(key)).userId;
  ({ settled, adWithImages } = sellerImages(key, userId));
});

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
      runImageJob(jobContext(onTestShard()), { jobId: job?.id as number }),
      runImageJob(jobContext(onTestShard()), { jobId: job?.id as number }),
    ]);
    await runImageJob(jobContext(onTestShard()), { jobId: job?.id as number });
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
