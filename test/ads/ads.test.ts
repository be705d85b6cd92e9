import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, expectError, newClient, twoClients } from "../harness/api";
import { adBody, CAR_CATEGORY, contactBody, createAd, createUser, GPSR_VALUES, SOFA_CATEGORY } from "../harness/data";

let key: string;
let internalKey: string;
let userId: number;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
  userId = (await createUser(key)).userId;
});

/** Items of a batch answer: done, or refused with the code ad_not_found. */
const done = (adId: number) => ({ adId, result: true, errors: [], errorDetails: [] });
const notFound = (adId: number, message: string) => ({
  adId,
  result: false,
  errors: [message],
  errorDetails: [{ code: "ad_not_found", field: "adId", message }],
});

describe("POST /ads/", () => {
  it("creates an ad and answers it with derived and read-only fields", async () => {
    const contactId = (await call("POST", "/contacts/", { key, body: contactBody(userId) })).body.data[0]?.contactId;
    const folderId = (await call("POST", "/folders/", { key, body: { userId, description: "Banken" } })).body.data[0]
      ?.folderId;
    const answer = await call("POST", "/ads/", {
      key,
      body: adBody(userId, {
        contactId,
        folderId,
        imagetext: "Nu met korting!",
        price: { model: "bidding", price: 25000, minimumBid: 15000, retail: 99900 },
        attributes: [
          {
            portal: "portal_a",
            locale: "nl_NL",
            values: [{ key: "condition", value: "gebruikt" }, { key: "delivery", value: "ophalen" }, ...GPSR_VALUES],
          },
          { portal: "portal_b", values: [{ key: "condition", value: "zo goed als nieuw" }] },
        ],
        settings: [{ portal: "portal_a", autoreplace: true, video: "https://cdn.example.nl/video/bank.mp4" }],
        provider: { name: "Verkoper BV", city: "Utrecht" },
      }),
    });
    const body = expectEnvelope(answer, 200);
    const ad = body.data;
    expect(ad).toMatchObject({
      userId,
      contactId,
      folderId,
      status: "active",
      externalAdId: 501,
      type: "supply",
      title: "Leren bank, drie zits",
      description: "Mooie <b>leren</b> bank in goede staat.",
      imagetext: "Nu met korting!",
      groupId: 93,
      groupDescription: "Huis en Inrichting",
      categoryId: SOFA_CATEGORY,
      categoryDescription: "Banken",
      price: { model: "bidding", price: 25000, minimumBid: 15000, shippingCosts: null, retailPrice: 99900 },
      images: false,
      misc: { licensePlate: null },
      provider: { name: "Verkoper BV", city: "Utrecht" },
      settings: [
        { portal: "portal_a", showcontact: true, autoreplace: true, video: "https://cdn.example.nl/video/bank.mp4" },
      ],
      contact: { contactId, name: "Showroom Noord", city: "Groningen", country: "NL" },
    });
    expect(ad.attributes).toEqual([
      {
        portal: "portal_a",
        locale: "nl_NL",
        attributes: [
          { key: "condition", value: "gebruikt", label: "Conditie" },
          { key: "delivery", value: "ophalen", label: "Levering" },
          { key: "manufacturerTradename", value: "Meubelfabriek B.V.", label: "Fabrikant (handelsnaam)" },
          { key: "manufacturerAddress", value: "Fabrieksweg 1, 1234 AB Utrecht", label: "Fabrikant (adres)" },
          { key: "manufacturerEmail", value: "veiligheid@meubelfabriek.nl", label: "Fabrikant (e-mail)" },
        ],
      },
      {
        portal: "portal_b",
        locale: "nl_NL",
        attributes: [{ key: "condition", value: "zo goed als nieuw", label: "Conditie" }],
      },
    ]);
    expect(ad.prices.portal_a.map((p: { action: string }) => p.action)).toEqual([
      "plaatsen",
      "omhoogplaatsen",
      "blikvanger",
      "dagtopper",
      "topadvertentie",
    ]);
    expect(ad.prices.portal_a[0]).toEqual({
      action: "plaatsen",
      priceInternal: 0,
      priceExternal: 0,
      priceTotal: 0,
      priceNative: 0,
    });
    expect(ad.portals.map((p: { portal: string }) => p.portal)).toEqual(["portal_a", "portal_b", "website"]);
    expect(ad.portals[0]).toEqual({
      portal: "portal_a",
      publish: {
        pending: false,
        pendingDate: "0000-00-00 00:00:00",
        processing: false,
        processingDate: "0000-00-00 00:00:00",
        error: false,
        active: false,
        online: false,
        startDate: "0000-00-00 00:00:00",
        closeDate: "0000-00-00 00:00:00",
        remoteAdId: 0,
        errorReason: null,
        queueItemId: null,
        clientResult: false,
        queueResult: false,
      },
      features: false,
    });
    expect(ad.portals[2].publish).not.toHaveProperty("clientResult");
  });

  it("answers numbers for numeric attributes and repeats the key of a multi-value LIST", async () => {
    const ad = await createAd(key, userId, {
      categoryId: CAR_CATEGORY,
      title: "Volkswagen Golf 1.4 TSI",
      misc: { licensePlate: "AB-123-C" },
      attributes: [
        {
          portal: "portal_a",
          values: [
            { key: "brand", value: "Volkswagen" },
            { key: "model", value: "Golf" },
            { key: "mileage", value: "85000" },
            { key: "year", value: 2017 },
            { key: "fuel", value: "benzine" },
            { key: "options", value: "airco" },
            { key: "options", value: "navigatie" },
          ],
        },
      ],
    });
    expect(ad.misc.licensePlate).toBe("AB-123-C");
    expect(ad.groupDescription).toBe("Auto's");
    expect(ad.attributes[0]?.attributes).toContainEqual({ key: "mileage", value: 85000, label: "Kilometerstand" });
    expect(ad.attributes[0]?.attributes.filter((a: { key: string }) => a.key === "options")).toHaveLength(2);
    expect(ad.prices.portal_a[0]).toMatchObject({ action: "plaatsen", priceTotal: 595 });
  });

  it.each([
    [{ title: "Bank" }, "title: must be 5-60 characters"],
    [{ title: "x".repeat(61) }, "title: must be 5-60 characters"],
    [{ description: "kort" }, "description: must be 5-65536 characters"],
    [{ description: "x".repeat(65537) }, "description: must be 5-65536 characters"],
    [{ imagetext: "x".repeat(19) }, "imagetext: must be at most 18 characters"],
    [{ status: "deleted" }, "status: must be one of: concept, active, archive"],
    [{ type: "sale" }, "type: must be one of: supply, demand"],
    [{ categoryId: 424242 }, "categoryId: category 424242 not found"],
    [{ categoryId: undefined }, "categoryId: is required"],
    [
      { price: { model: "trade" } },
      'price.model: the price model "trade" has been removed; use one of: fixed, bidding, see description, reserved',
    ],
    [
      { price: { model: "buy it now", price: 100 } },
      'price.model: the price model "buy it now" has been removed; use one of: fixed, bidding, see description, reserved',
    ],
    [
      { price: { model: "to be discussed" } },
      'price.model: the price model "to be discussed" has been removed; use one of: fixed, bidding, see description, reserved',
    ],
    [
      { price: { model: "by request" } },
      'price.model: the price model "by request" has been removed; use one of: fixed, bidding, see description, reserved',
    ],
    [{ price: { model: "free" } }, "price.model: must be one of: fixed, bidding, see description, reserved"],
    [{ price: { model: "fixed" } }, "price.price: is required for model fixed"],
    [{ price: { model: "bidding", price: 100 } }, "price.minimumBid: is required for model bidding"],
    [{ price: undefined }, "price: is required"],
    [{ misc: { licensePlate: "AB-123-CDE" } }, "misc.licensePlate: must be at most 8 characters"],
    [{ misc: { licensePlate: "AB-123-C" } }, "misc.licensePlate: only allowed in automotive categories"],
    [
      { settings: [{ portal: "portal_a", video: "https://example.nl/film.avi" }] },
      "settings[0].video: must be the URL of an mp4 video",
    ],
    [{ contactId: 999999 }, `contactId: contact 999999 not found for user`],
    [{ folderId: 999999 }, `folderId: folder 999999 not found for user`],
    [
      { attributes: [{ portal: "portal_b", values: [{ key: "colour", value: "rood" }] }] },
      "attributes.portal_b.colour: not an attribute of category 9301 on portal_b",
    ],
    [{ attributes: [{ portal: "portal_b", values: [] }] }, "attributes.portal_b.condition: is required"],
    [
      { attributes: [{ portal: "portal_b", values: [{ key: "condition", value: "kapot" }] }] },
      "attributes.portal_b.condition: must be one of: ",
    ],
    [
      {
        attributes: [
          {
            portal: "portal_b",
            values: [
              { key: "condition", value: "nieuw" },
              { key: "condition", value: "gebruikt" },
            ],
          },
        ],
      },
      "attributes.portal_b.condition: takes one value (only LIST attributes repeat their key)",
    ],
    [
      { attributes: [{ portal: "portal_a", values: [{ key: "condition", value: "nieuw" }] }] },
      "attributes.portal_a.manufacturerTradename: is required on portal_a for business sellers (product safety), unless a manufacturer is attached",
    ],
  ])("refuses %j with a message naming the field", async (overrides, message) => {
    const answer = await call("POST", "/ads/", { key, body: adBody(userId, overrides) });
    expectEnvelope(answer, 400);
    expect(
      answer.body.errors.some((e: string) => e.startsWith(message)),
      JSON.stringify(answer.body.errors),
    ).toBe(true);
  });

  it("checks numeric attributes against type and range", async () => {
    const car = (values: { key: string; value: unknown }[]) =>
      call("POST", "/ads/", {
        key,
        body: adBody(userId, {
          categoryId: CAR_CATEGORY,
          attributes: [
            {
              portal: "portal_a",
              values: [
                { key: "brand", value: "Toyota" },
                { key: "model", value: "Yaris" },
                { key: "fuel", value: "hybride" },
                ...values,
              ],
            },
          ],
        }),
      });
    const cases: [{ key: string; value: unknown }[], string][] = [
      [
        [
          { key: "mileage", value: -1 },
          { key: "year", value: 2010 },
        ],
        "attributes.portal_a.mileage: must be at least 0",
      ],
      [
        [
          { key: "mileage", value: 10 },
          { key: "year", value: 2030 },
        ],
        "attributes.portal_a.year: must be at most 2027",
      ],
      [
        [
          { key: "mileage", value: "veel" },
          { key: "year", value: 2010 },
        ],
        "attributes.portal_a.mileage: must be a number",
      ],
      [
        [
          { key: "mileage", value: 10.5 },
          { key: "year", value: 2010 },
        ],
        "attributes.portal_a.mileage: must be a whole number",
      ],
      [[{ key: "year", value: 2010 }], "attributes.portal_a.mileage: is required"],
    ];
    for (const [values, message] of cases) {
      const answer = await car(values);
      expectEnvelope(answer, 400);
      expect(answer.body.errors).toContain(message);
    }
  });

  it("needs no product-safety data from a private seller", async () => {
    const privateUser = await createUser(key, { companyName: null });
    const ad = await createAd(key, privateUser.userId, {
      attributes: [{ portal: "portal_a", values: [{ key: "condition", value: "nieuw" }] }],
    });
    expect(ad.attributes[0]?.attributes).toHaveLength(1);
  });

  it("requires externalAdId from partner clients only", async () => {
    const refused = await call("POST", "/ads/", { key, body: adBody(userId, { externalAdId: undefined }) });
    expectEnvelope(refused, 400);
    expect(refused.body.errors).toEqual(["externalAdId: is required for partner clients"]);
    const internalUser = await createUser(internalKey);
    expectEnvelope(
      await call("POST", "/ads/", { key: internalKey, body: adBody(internalUser.userId, { externalAdId: undefined }) }),
      200,
    );
  });

  it("sanitises the description to b, strong, u, ul, li and br", async () => {
    const ad = await createAd(key, userId, {
      description:
        '<p>Bank</p><script>alert(1)</script><ul><li onclick="x()">Leer</li></ul><a href="https://x">link</a><br/>',
    });
    expect(ad.description).toBe("Bank<ul><li>Leer</li></ul>link<br>");
  });

  it("stores nothing when the request fails", async () => {
    const before = await env.DB.prepare("SELECT count(*) AS n FROM ads").first<{ n: number }>();
    await call("POST", "/ads/", {
      key,
      body: adBody(userId, { attributes: [{ portal: "portal_b", values: [{ key: "condition", value: "kapot" }] }] }),
    });
    const after = await env.DB.prepare("SELECT count(*) AS n FROM ads").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });
});

describe("PUT, PATCH and DELETE /ads/", () => {
  it("updates the given fields, replaces attribute sets per portal and keeps the rest", async () => {
    const ad = await createAd(key, userId, {
      attributes: [
        { portal: "portal_b", values: [{ key: "condition", value: "nieuw" }] },
        { portal: "portal_a", values: [{ key: "condition", value: "nieuw" }, ...GPSR_VALUES] },
      ],
    });
    const answer = await call("PUT", "/ads/", {
      key,
      body: {
        adId: ad.adId,
        title: "Leren bank, twee zits",
        price: { model: "see description" },
        attributes: [{ portal: "portal_b", values: [{ key: "condition", value: "gebruikt" }] }],
        settings: [{ portal: "portal_b", showcontact: false }],
      },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toMatchObject({
      title: "Leren bank, twee zits",
      description: ad.description,
      price: { model: "see description", price: null },
      settings: [{ portal: "portal_b", showcontact: false, autoreplace: false }],
    });
    const byPortal = Object.fromEntries(
      answer.body.data.attributes.map((a: { portal: string; attributes: unknown[] }) => [a.portal, a.attributes]),
    );
    expect(byPortal.portal_b).toEqual([{ key: "condition", value: "gebruikt", label: "Conditie" }]);
    expect(byPortal.portal_a).toHaveLength(4);

    const refused = await call("PUT", "/ads/", { key, body: { adId: ad.adId, price: { model: "trade" } } });
    expectEnvelope(refused, 400);
  });

  it("patches the status, and archiving leaves the publication alone", async () => {
    const ad = await createAd(key, userId);
    await env.DB.prepare(
      "INSERT INTO ad_publications (ad_id, portal, active, online, remote_ad_id) VALUES (?, 'portal_a', 1, 1, 77)",
    )
      .bind(ad.adId)
      .run();
    const answer = await call("PATCH", "/ads/", { key, body: { adId: ad.adId, status: "archive" } });
    expectEnvelope(answer, 200);
    expect(answer.body.data.status).toBe("archive");
    expect(answer.body.data.portals[0]?.publish).toMatchObject({ active: true, online: true, remoteAdId: 77 });
    const refused = await call("PATCH", "/ads/", { key, body: { adId: ad.adId, status: "archive", title: "x" } });
    expectError(refused, "unknown_field");
    expect(refused.body.errors).toEqual(["title: cannot be patched; PATCH changes only status"]);
    expectEnvelope(await call("PATCH", "/ads/", { key, body: { adId: ad.adId, status: "gone" } }), 400);
  });

  it("deletes an ad", async () => {
    const ad = await createAd(key, userId);
    const answer = await call("DELETE", `/ads/${ad.adId}`, { key });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual([]);
    expectEnvelope(await call("DELETE", `/ads/${ad.adId}`, { key }), 404);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM ads WHERE id = ?")
      .bind(ad.adId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });

  it("patches and deletes in batches, failing only the bad items", async () => {
    const a = await createAd(key, userId);
    const b = await createAd(key, userId);
    const other = await createUser(key, { externalUserId: 9 });
    const c = await createAd(key, other.userId);
    const patched = await call("PATCH", "/ads/batch", {
      key,
      body: { userId, adId: [a.adId, 99999999, b.adId, c.adId], status: "concept" },
    });
    expectEnvelope(patched, 200);
    expect(patched.body.data).toEqual([
      done(a.adId),
      notFound(99999999, "adId: ad 99999999 not found"),
      done(b.adId),
      notFound(c.adId, `adId: ad ${c.adId} does not belong to user ${userId}`),
    ]);
    const statuses = await call("GET", `/ads/?adId=${a.adId},${b.adId},${c.adId}`, { key });
    expect(statuses.body.data.map((ad: { status: string }) => ad.status)).toEqual(["concept", "concept", "active"]);

    const deleted = await call("DELETE", "/ads/batch/", { key, body: { adId: [a.adId, 88888888] } });
    expect(deleted.body.data).toEqual([done(a.adId), notFound(88888888, "adId: ad 88888888 not found")]);
    expectEnvelope(await call("PATCH", "/ads/batch", { key, body: { adId: [], status: "active" } }), 400);
  });
});

describe("ad settings", () => {
  it("reads and replaces an ad's settings per portal", async () => {
    const ad = await createAd(key, userId);
    const empty = await call("GET", `/adsettings/${ad.adId}`, { key });
    expect(empty.body.data).toEqual({ adId: ad.adId, settings: [] });
    const answer = await call("POST", "/adsettings/", {
      key,
      body: { adId: ad.adId, settings: [{ portal: "portal_b", autoreplace: true, video: "www.example.nl/a.mp4" }] },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual({
      adId: ad.adId,
      settings: [{ portal: "portal_b", showcontact: true, autoreplace: true, video: "www.example.nl/a.mp4" }],
    });
    expect((await call("GET", `/adsettings/?adId=${ad.adId}`, { key })).body.data.settings).toHaveLength(1);
    expectEnvelope(await call("GET", "/adsettings/", { key }), 400);
    expectEnvelope(
      await call("POST", "/adsettings/", { key, body: { adId: ad.adId, settings: [{ portal: "website" }] } }),
      400,
    );
  });
});

describe("tenant isolation", () => {
  it("answers 404 to another client on every ad and ad-settings endpoint", async () => {
    const ad = await createAd(key, userId);
    const { key: otherKey } = await newClient({ partner: true });
    const calls: [string, string, unknown?][] = [
      ["POST", "/ads/", adBody(userId)],
      ["PUT", "/ads/", { adId: ad.adId, title: "Overgenomen bank" }],
      ["PATCH", "/ads/", { adId: ad.adId, status: "archive" }],
      ["DELETE", `/ads/${ad.adId}`],
      ["GET", `/adsettings/${ad.adId}`],
      ["POST", "/adsettings/", { adId: ad.adId, settings: [{ portal: "portal_a", autoreplace: true }] }],
    ];
    for (const [method, path, body] of calls) {
      const answer = await call(method, path, { key: otherKey, body });
      expect(answer.status, `${method} ${path}`).toBe(404);
    }
    const list = await call("GET", `/ads/?adId=${ad.adId}`, { key: otherKey });
    expect(list.body.totalItems).toBe(0);
    const batch = await call("PATCH", "/ads/batch", { key: otherKey, body: { adId: [ad.adId], status: "archive" } });
    expect(batch.body.data).toEqual([notFound(ad.adId, `adId: ad ${ad.adId} not found`)]);
    const deleted = await call("DELETE", "/ads/batch", { key: otherKey, body: { adId: [ad.adId] } });
    expect(deleted.body.data).toEqual([notFound(ad.adId, `adId: ad ${ad.adId} not found`)]);
    const after = await call("GET", `/ads/?adId=${ad.adId}`, { key });
    expect(after.body.data[0]).toMatchObject({ status: "active", title: ad.title });
  });
});

describe("random bodies", () => {
  it("never answer a 5xx or anything but the envelope", async () => {
    const fields = fc.constantFrom(
      "userId",
      "adId",
      "categoryId",
      "title",
      "description",
      "price",
      "attributes",
      "settings",
      "misc",
      "status",
      "manufacturerId",
      "portal",
      "values",
      "model",
    );
    const body = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fields, fc.oneof(fc.jsonValue(), fc.constant(userId), fc.constant(SOFA_CATEGORY))),
    );
    const writes: [string, string][] = [
      ["POST", "/ads/"],
      ["PUT", "/ads/"],
      ["PATCH", "/ads/"],
      ["PATCH", "/ads/batch"],
      ["DELETE", "/ads/batch"],
      ["POST", "/adsettings/"],
      ["POST", "/groups/"],
      ["POST", "/attributes/"],
      ["POST", "/manufacturers/"],
      ["PUT", "/manufacturers/"],
      ["DELETE", "/manufacturers/"],
      ["POST", "/manufacturers/batch/"],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writes), body, async ([method, path], payload) => {
        const answer = await call(method, path, { key, body: payload });
        expect(answer.status).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
        expect(Array.isArray(answer.body.errors)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
