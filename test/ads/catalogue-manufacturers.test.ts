import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, newClient } from "../harness/api";
import { createAd, createUser, SOFA_CATEGORY } from "../harness/data";

let key: string;
let userId: number;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
  userId = (await createUser(key)).userId;
});

describe("POST /groups/", () => {
  it("lists at least 8 groups with 40 categories, with descriptions per locale", async () => {
    const answer = await call("POST", "/groups/", { key, body: { itemsPerPage: 100 } });
    expectEnvelope(answer, 200);
    expect(answer.body.totalItems).toBeGreaterThanOrEqual(8);
    expect(answer.body.data.find((g: { groupId: number }) => g.groupId === 93)).toEqual({
      groupId: 93,
      descriptions: [
        { locale: "nl_NL", description: "Huis en Inrichting" },
        { locale: "en_GB", description: "House and furniture" },
      ],
    });
    const categories = await env.DB.prepare("SELECT count(*) AS n FROM categories").first<{ n: number }>();
    expect(categories?.n).toBeGreaterThanOrEqual(40);
  });

  it("filters by groupId and locale, pages, and adds availability", async () => {
    const answer = await call("POST", "/groups/", {
      key,
      body: { groupId: [91, 93], locale: ["en_GB"], availability: true, itemsPerPage: 1, page: 2 },
    });
    expect(answer.body).toMatchObject({ totalItems: 2, totalInSet: 1, page: 2 });
    expect(answer.body.data).toEqual([
      {
        groupId: 93,
        descriptions: [{ locale: "en_GB", description: "House and furniture" }],
        availability: { portal_a: true, portal_b: true, website: true },
      },
    ]);
    expectEnvelope(await call("POST", "/groups/", { key, body: { itemsPerPage: 101 } }), 400);
    expectEnvelope(await call("POST", "/groups/", { key, body: { locale: ["de_DE"] } }), 400);
  });

  it("with userId, lists only the groups of the user's ads in the given status, with totals", async () => {
    const user = await createUser(key, { externalUserId: 77 });
    await createAd(key, user.userId);
    await createAd(key, user.userId, { categoryId: 9401, status: "archive" });
    const active = await call("POST", "/groups/", { key, body: { userId: user.userId, total: true } });
    expect(active.body.data.map((g) => [g.groupId, g.total])).toEqual([[93, 1]]);
    const archived = await call("POST", "/groups/", { key, body: { userId: user.userId, status: "archive" } });
    expect(archived.body.data.map((g: { groupId: number }) => g.groupId)).toEqual([94]);
    const { key: otherKey } = await newClient();
    expectEnvelope(await call("POST", "/groups/", { key: otherKey, body: { userId: user.userId } }), 404);
  });

  it("serves from the cache with useCache", async () => {
    const first = await call("POST", "/groups/", { key, body: { useCache: true, groupId: [92] } });
    expect(first.body.fromCache).toBe(false);
    const second = await call("POST", "/groups/", { key, body: { useCache: true, groupId: [92] } });
    expect(second.body.fromCache).toBe(true);
    expect(second.body.data).toEqual(first.body.data);
    const other = await call("POST", "/groups/", { key, body: { useCache: true, groupId: [93] } });
    expect(other.body.fromCache).toBe(false);
  });
});

describe("GET /categories/[<categoryId>]", () => {
  it("names each category: its group, descriptions per locale, targets and mandatory keys per attribute set", async () => {
    const all = await call("GET", "/categories/?itemsPerPage=500", { key });
    expectEnvelope(all, 200);
    expect(all.body.totalItems).toBeGreaterThanOrEqual(40);
    const sofa = defined(all.body.data.find((c: { categoryId: number }) => c.categoryId === SOFA_CATEGORY));
    const one = await call("GET", `/categories/${SOFA_CATEGORY}`, { key });
    expectEnvelope(one, 200);
    expect(one.body.data).toEqual([sofa]);
    expect(sofa).toMatchObject({
      groupId: 93,
      descriptions: [
        { locale: "nl_NL", description: "Banken" },
        { locale: "en_GB", description: "Sofas" },
      ],
    });
    expect(sofa.portals).toContain("website");
    // The mandatory keys are the ones /attributes/ marks mandatory, per attribute set.
    const definitions = await call("POST", "/attributes/", { key, body: { categoryId: [SOFA_CATEGORY] } });
    const entry = defined(definitions.body.data[0]);
    for (const set of entry.attributes as { portal: string; attributes: { key: string; mandatory: boolean }[] }[]) {
      expect(sofa.mandatoryAttributes.find((m: { portal: string }) => m.portal === set.portal)?.keys).toEqual(
        set.attributes.filter((a) => a.mandatory).map((a) => a.key),
      );
    }
    // A marketplace is a target where the category has its definitions and prices (as the tables hold them).
    const { results: offered } = await env.DB.prepare(
      `SELECT c.id, group_concat(p.portal) AS portals FROM categories c LEFT JOIN (
         SELECT DISTINCT d.category_id, d.portal FROM attribute_definitions d
         JOIN category_prices cp ON cp.category_id = d.category_id AND cp.portal = d.portal
         WHERE d.portal IN ('portal_a', 'portal_b') ORDER BY d.portal) p ON p.category_id = c.id GROUP BY c.id`,
    ).all<{ id: number; portals: string | null }>();
    const expected = Object.fromEntries(
      offered.map((row) => [row.id, [...(row.portals?.split(",").sort() ?? []), "website"]]),
    );
    expect(
      Object.fromEntries(
        all.body.data.map((c: { categoryId: number; portals: string[] }) => [c.categoryId, c.portals]),
      ),
    ).toEqual(expected);
  });

  it("filters by group and locale, and answers 404 category_not_found for an unknown id", async () => {
    const mopeds = await call("GET", "/categories/?groupId=92&locale=en_GB", { key });
    expectEnvelope(mopeds, 200);
    expect(mopeds.body.data.length).toBeGreaterThan(0);
    expect(mopeds.body.data.every((c: { groupId: number }) => c.groupId === 92)).toBe(true);
    expect(mopeds.body.data.map((c: { descriptions: unknown[] }) => c.descriptions.length)).not.toContain(2);
    expect(mopeds.body.data.find((c: { categoryId: number }) => c.categoryId === 9204)?.descriptions).toEqual([
      { locale: "en_GB", description: "Mopeds" },
    ]);
    const missing = await call("GET", "/categories/999999", { key });
    expectError(missing, "category_not_found");
    expect(missing.body.errors[0]).toBe("categoryId: category 999999 not found");
    expectError(await call("GET", "/categories/?locale=fr_FR", { key }), "validation_failed");
  });

  it("appear inside /groups/ when asked, and /attributes/ entries carry their group and name", async () => {
    const groups = await call("POST", "/groups/", { key, body: { groupId: [92], categories: true } });
    expectEnvelope(groups, 200);
    const inGroup = (await call("GET", "/categories/?groupId=92", { key })).body.data;
    expect(defined(groups.body.data[0]).categories).toEqual(inGroup);
    const plain = await call("POST", "/groups/", { key, body: { groupId: [92] } });
    expect(defined(plain.body.data[0]).categories).toBeUndefined();
    const attributes = await call("POST", "/attributes/", { key, body: { categoryId: [9204], locale: ["en_GB"] } });
    expect(attributes.body.data[0]).toMatchObject({ categoryId: 9204, groupId: 92, categoryDescription: "Mopeds" });
  });
});

describe("POST /attributes/", () => {
  it("answers the definitions per portal, with the mandatory keys and GPSR keys on portal_a", async () => {
    const answer = await call("POST", "/attributes/", { key, body: { categoryId: [SOFA_CATEGORY] } });
    expectEnvelope(answer, 200);
    const [entry] = answer.body.data;
    expect(entry?.categoryId).toBe(SOFA_CATEGORY);
    expect(entry?.attributes.map((c: { portal: string }) => c.portal).sort()).toEqual([
      "portal_a",
      "portal_b",
      "portal_own",
    ]);
    const portalA = entry?.attributes.find((c: { portal: string }) => c.portal === "portal_a");
    expect(portalA?.locale).toBe("nl_NL");
    expect(portalA?.attributes.find((a: { key: string }) => a.key === "condition")).toMatchObject({
      label: "Conditie",
      type: "STRING",
      mandatory: true,
      values: expect.arrayContaining(["nieuw", "gebruikt", "zo goed als nieuw"]),
    });
    expect(portalA?.attributes.find((a: { key: string }) => a.key === "manufacturerEmail")).toMatchObject({
      values: "",
      mandatory: false,
    });
    expect(portalA?.attributes.find((a: { key: string }) => a.key === "delivery")?.values).toEqual([
      "ophalen",
      "ophalen of verzenden",
      "verzenden",
    ]);
  });

  it("covers automotive attributes and English labels", async () => {
    const answer = await call("POST", "/attributes/", { key, body: { categoryId: [9101], locale: ["en_GB"] } });
    const portalA = answer.body.data[0]?.attributes.find((c: { portal: string }) => c.portal === "portal_a");
    expect(portalA?.locale).toBe("en_GB");
    const byKey = Object.fromEntries(defined(portalA).attributes.map((a) => [a.key, a]));
    expect(Object.keys(byKey)).toEqual(
      expect.arrayContaining(["brand", "model", "mileage", "year", "fuel", "options"]),
    );
    expect(byKey.mileage).toMatchObject({ label: "Mileage", type: "NUMBER", minimum: 0, unit: "km", mandatory: true });
    expect(byKey.options?.type).toBe("LIST");
  });

  it("lists all categories when none are given, paged", async () => {
    const answer = await call("POST", "/attributes/", { key, body: { itemsPerPage: 10 } });
    expect(answer.body.totalItems).toBeGreaterThanOrEqual(40);
    expect(answer.body.totalInSet).toBe(10);
  });
});

describe("manufacturers", () => {
  const body = (overrides: Record<string, unknown> = {}) => ({
    userId,
    categoryId: SOFA_CATEGORY,
    brands: ["Montèl", "Leolux"],
    manufacturerTradename: "Leolux Meubelfabriek B.V.",
    manufacturerAddress: "Roermondseweg 91, 5917 AB Venlo",
    manufacturerEmail: "info@leolux.nl",
    ...overrides,
  });

  it("creates, finds, updates and removes a manufacturer", async () => {
    const created = await call("POST", "/manufacturers/", { key, body: body() });
    expectEnvelope(created, 200);
    expect(created.body.data).toEqual({
      manufacturerId: expect.any(Number),
      userId,
      groupId: 93,
      categoryId: SOFA_CATEGORY,
      categoryDescription: "Banken",
      brands: ["Montèl", "Leolux"],
      manufacturerTradename: "Leolux Meubelfabriek B.V.",
      manufacturerAddress: "Roermondseweg 91, 5917 AB Venlo",
      manufacturerEmail: "info@leolux.nl",
      description: "",
    });
    const manufacturerId = created.body.data.manufacturerId;
    for (const query of [
      "brand=leolux",
      `manufacturerId=${manufacturerId}`,
      "groupId=93",
      `categoryId=${SOFA_CATEGORY}`,
      "categoryDescription=bank",
      "manufacturerTradename=Meubelfabriek",
      `userId=${userId}`,
    ]) {
      const answer = await call("GET", `/manufacturers/?${query}`, { key });
      expect(
        answer.body.data.map((m) => m.manufacturerId),
        query,
      ).toContain(manufacturerId);
    }
    expect((await call("GET", "/manufacturers/?brand=Gispen", { key })).body.data).toEqual([]);

    const updated = await call("PUT", "/manufacturers/", {
      key,
      body: { manufacturerId, description: "Hoofdleverancier" },
    });
    expect(updated.body.data).toMatchObject({
      manufacturerId,
      description: "Hoofdleverancier",
      manufacturerEmail: "info@leolux.nl",
    });

    const removed = await call("DELETE", "/manufacturers/", { key, body: { manufacturerId } });
    expectEnvelope(removed, 200);
    expect(removed.body.data).toEqual([]);
    expectEnvelope(await call("PUT", "/manufacturers/", { key, body: { manufacturerId, description: "x" } }), 404);
  });

  it.each([
    [{ manufacturerEmail: "geen-adres" }, "manufacturerEmail: must be a valid e-mail address"],
    [{ manufacturerTradename: undefined }, "manufacturerTradename: is required"],
    [{ categoryId: 424242 }, "categoryId: category 424242 not found"],
    [{ groupId: 91 }, `categoryId: category ${SOFA_CATEGORY} is not in group 91`],
  ])("refuses %j", async (overrides, message) => {
    const answer = await call("POST", "/manufacturers/", { key, body: body(overrides) });
    expectEnvelope(answer, 400);
    expect(answer.body.errors).toContain(message);
  });

  it("suggests data from the built-in directory with aiassist when nothing stored matches", async () => {
    const answer = await call("GET", "/manufacturers/?brand=Gazelle&aiassist=true", { key });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual([
      expect.objectContaining({
        manufacturerId: null,
        suggestion: true,
        brands: ["Gazelle"],
        manufacturerTradename: "Koninklijke Gazelle N.V.",
      }),
    ]);
    expect((await call("GET", "/manufacturers/?brand=Gazelle", { key })).body.data).toEqual([]);
  });

  it("attaches a manufacturer to the user's ads in its category, and requests updates where published", async () => {
    const user = await createUser(key, { externalUserId: 88 });
    const sofa = await createAd(key, user.userId);
    const otherSofa = await createAd(key, user.userId);
    const table = await createAd(key, user.userId, { categoryId: 9302 });
    await env.DB.prepare(
      "INSERT INTO ad_publications (ad_id, portal, active) VALUES (?, 'portal_a', 1), (?, 'portal_b', 0)",
    )
      .bind(sofa.adId, sofa.adId)
      .run();
    const manufacturerId = (await call("POST", "/manufacturers/", { key, body: body({ userId: user.userId }) })).body
      .data.manufacturerId;

    const answer = await call("POST", "/manufacturers/batch/", {
      key,
      body: { manufacturerId, userId: user.userId, publish: true },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual([]);
    const attached = await call("GET", `/ads/?userId=${user.userId}`, { key });
    expect(
      Object.fromEntries(
        attached.body.data.map((ad: { adId: number; manufacturerId: number | null }) => [ad.adId, ad.manufacturerId]),
      ),
    ).toEqual({
      [sofa.adId]: manufacturerId,
      [otherSofa.adId]: manufacturerId,
      [table.adId]: null,
    });
    // The published ad's update is queued (the unpublished one has nothing to update).
    const updates = await eventually(async () => {
      const rows = await env.DB.prepare("SELECT ad_id, portal, action FROM queue_items WHERE ad_id IN (?, ?)")
        .bind(sofa.adId, otherSofa.adId)
        .all();
      return rows.results.length > 0 ? rows.results : undefined;
    }, "the queued update");
    expect(updates).toEqual([{ ad_id: sofa.adId, portal: "portal_a", action: "update" }]);

    const explicit = await call("POST", "/manufacturers/batch/", {
      key,
      body: { manufacturerId, userId: user.userId, adId: table.adId },
    });
    expectEnvelope(explicit, 200);
    const refused = await call("POST", "/manufacturers/batch/", {
      key,
      body: { manufacturerId, userId: user.userId, adId: [99999999] },
    });
    expectEnvelope(refused, 400);
    expect(refused.body.errors).toEqual([`adId: ad 99999999 not found for user ${user.userId}`]);
  });

  it("keeps manufacturers to their client", async () => {
    const manufacturerId = (await call("POST", "/manufacturers/", { key, body: body() })).body.data.manufacturerId;
    const { key: otherKey } = await newClient({ partner: true });
    expect(
      (await call("GET", `/manufacturers/?manufacturerId=${manufacturerId}`, { key: otherKey })).body.data,
    ).toEqual([]);
    expect((await call("POST", "/manufacturers/", { key: otherKey, body: body() })).status).toBe(404);
    expect(
      (await call("PUT", "/manufacturers/", { key: otherKey, body: { manufacturerId, description: "x" } })).status,
    ).toBe(404);
    expect((await call("DELETE", "/manufacturers/", { key: otherKey, body: { manufacturerId } })).status).toBe(404);
    expect(
      (await call("POST", "/manufacturers/batch/", { key: otherKey, body: { manufacturerId, userId } })).status,
    ).toBe(404);
  });
});
