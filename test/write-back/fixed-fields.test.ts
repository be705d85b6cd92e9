import { beforeAll, describe, expect, it } from "vitest";
import { call } from "../harness/api";
import { CAR_CATEGORY, createAd, createUser } from "../harness/data";
import { created, type Resource, read, setUp } from "./subjects";

/** Fixed fields, ids the path names, nested unknown fields and the answers' spellings, one by one. */

let key: string;

beforeAll(async () => {
  key = await setUp();
});

describe("fixed fields, path ids and spellings", () => {
  const problems = (answer: { body: { errorDetails?: { code: string; message: string }[] } }) =>
    (answer.body.errorDetails ?? []).map(({ code, message }) => `${code} ${message}`);

  it("takes an ad's fixed fields when they are the stored ones, and names each one changed", async () => {
    const { userId } = await createUser(key);
    const ad = await createAd(key, userId, { externalAdId: 4711 });
    const same = await call("PUT", "/ads/", {
      key,
      body: { adId: ad.adId, userId, externalAdId: 4711, categoryId: ad.categoryId, title: "Leren bank, als nieuw" },
    });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    expect(same.body.data).toMatchObject({ title: "Leren bank, als nieuw", externalAdId: 4711 });

    const moved = await call("PUT", "/ads/", {
      key,
      body: { adId: ad.adId, userId: userId + 1, externalAdId: 4712, categoryId: CAR_CATEGORY, title: "Anders" },
    });
    expect(moved.status).toBe(400);
    expect(problems(moved)).toEqual([
      "not_updatable userId: cannot be changed",
      "not_updatable externalAdId: cannot be changed",
      "not_updatable categoryId: cannot be changed",
    ]);
    expect((await read(`/ads/?adId=${ad.adId}`)).title).toBe("Leren bank, als nieuw");
  });

  it("takes a task's portal when it is the stored one, and refuses another", async () => {
    const { userId } = await createUser(key);
    const body = { userId, portal: "portal_a", time: "08:00", enabled: true };
    const taskId = ((await created("POST", "/tasks/", body)) as Resource[]).at(-1)?.taskId;
    expect((await call("PUT", "/tasks/", { key, body: { ...body, taskId, time: "08:15" } })).status).toBe(200);
    const other = await call("PUT", "/tasks/", { key, body: { ...body, taskId, portal: "portal_b" } });
    expect(other.status).toBe(400);
    expect(other.body.errorDetails).toEqual([
      { code: "not_updatable", field: "portal", message: "portal: cannot be changed" },
    ]);
  });

  it("takes the ids a path names in the body too, and refuses others", async () => {
    const { userId } = await createUser(key);
    const ad = await createAd(key, userId);
    const status = (body: unknown) => call("POST", `/imagestatus/${userId}/`, { key, body });
    expect((await status({ userId, adId: [ad.adId] })).status).toBe(200);
    expect(problems(await status({ userId: userId + 1, adId: [ad.adId] }))).toEqual([
      `not_updatable userId: must match the path (${userId})`,
    ]);
    const ofAd = await call("POST", `/imagestatus/${userId}/${ad.adId}`, { key, body: { adId: [ad.adId + 1] } });
    expect(problems(ofAd)).toEqual([`not_updatable adId: must match the path (${ad.adId})`]);
    const images = await call("PUT", `/images/${ad.adId}`, {
      key,
      body: { adId: ad.adId + 1, images: [{ image: { url: "http://images.test/red.png" } }] },
    });
    expect(problems(images)).toEqual([`not_updatable adId: must match the path (${ad.adId})`]);
    const webhook = (await created("POST", "/webhooks/", { url: `http://hooks.test/ok/path-${userId}` })) as Resource;
    const renamed = await call("PUT", `/webhooks/${webhook.webhookId}`, {
      key,
      body: { webhookId: Number(webhook.webhookId) + 1, description: "x" },
    });
    expect(problems(renamed)).toEqual([`not_updatable webhookId: must match the path (${webhook.webhookId})`]);
    await call("DELETE", `/webhooks/${webhook.webhookId}`, { key });
  });

  it("refuses an unknown field at any depth, named by its path, next to the resource's own fields", async () => {
    const { userId } = await createUser(key);
    const ad = await read(`/ads/?adId=${(await createAd(key, userId)).adId}`);
    const answer = await call("PUT", "/ads/", {
      key,
      body: {
        ...ad,
        price: { ...(ad.price as object), retial: 100 },
        attributes: [
          {
            portal: "portal_b",
            attributes: [
              { key: "condition", value: "nieuw" },
              { key: "x", value: 1, colour: "rood" },
            ],
          },
        ],
        settings: [{ portal: "portal_a", autoreplace: true, autoreplaec: false }],
        provider: { name: "Jan", naam: "Jan" },
      },
    });
    expect(answer.status).toBe(400);
    expect(problems(answer).sort()).toEqual(
      [
        "unknown_field attributes[0].attributes[1].colour: unknown field",
        "unknown_field price.retial: unknown field",
        "unknown_field provider.naam: unknown field",
        "unknown_field settings[0].autoreplaec: unknown field",
      ].sort(),
    );
  });

  it("takes an answer's spellings: retailPrice for retail, attributes for values, null for an absent amount", async () => {
    const { userId } = await createUser(key);
    const { adId } = await createAd(key, userId);
    const price = { model: "fixed", price: 1000, minimumBid: null, shippingCosts: null, retailPrice: 1500 };
    const attributes = [
      { portal: "portal_b", locale: "nl_NL", attributes: [{ key: "condition", value: "nieuw", label: "Conditie" }] },
    ];
    expect((await call("PUT", "/ads/", { key, body: { adId, price, attributes } })).status).toBe(200);
    const ad = await read(`/ads/?adId=${adId}`);
    expect(ad.price).toEqual(price);
    expect(ad.attributes).toContainEqual({
      portal: "portal_b",
      locale: "nl_NL",
      attributes: [{ key: "condition", value: "nieuw", label: expect.any(String) }],
    });
    // Both spellings at once must agree.
    const both = await call("PUT", "/ads/", {
      key,
      body: { adId, price: { ...price, retail: 1400 }, attributes: [{ ...attributes[0], values: [] }] },
    });
    expect(problems(both).sort()).toEqual([
      "validation_failed attributes[0].attributes: give values or attributes, not both",
      "validation_failed price.retailPrice: must equal retail when both are given",
    ]);
  });
});
