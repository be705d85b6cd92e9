import { env } from "cloudflare:test";
import { asc, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { ads } from "../../src/db/schema";
import { getAd, searchAds } from "../../src/services/adViews";
import { loadCatalogue } from "../../src/services/catalogue";
import { callerOf } from "../../src/services/shared";
import { call, expectEnvelope, groupOf, newClient } from "../harness/api";
import { countingD1, onTestShard } from "../harness/d1";
import { CAR_CATEGORY, createAd, createUser, manufacturerBody, PAID_CATEGORY, SOFA_CATEGORY } from "../harness/data";

let key: string;
let internalKey: string;
let clientId: number;
let userId: number;
let folderId: number;
const ids = { sofa: 0, golf: 0, yaris: 0, table: 0, lamp: 0 };

const car = (brand: string, mileage: number, options: string[]) => ({
  categoryId: CAR_CATEGORY,
  attributes: [
    {
      portal: "portal_a",
      values: [
        { key: "brand", value: brand },
        { key: "model", value: "Basis" },
        { key: "mileage", value: mileage },
        { key: "year", value: 2015 },
        { key: "fuel", value: "benzine" },
        ...options.map((value) => ({ key: "options", value })),
      ],
    },
  ],
});

/** The known data set: five ads of one user, created in this order. */
beforeAll(async () => {
  const partner = await newClient({ partner: true });
  key = partner.key;
  clientId = partner.client.id;
  internalKey = (await newClient({ internal: true })).key;
  userId = (await createUser(key)).userId;
  folderId = Number(
    (await call("POST", "/folders/", { key, body: { userId, description: "Auto's" } })).body.data[0]?.folderId,
  );
  ids.sofa = (
    await createAd(key, userId, {
      title: "Leren bank cognac",
      description: "Zeer comfortabele bank",
      price: { model: "fixed", price: 30000 },
    })
  ).adId;
  ids.golf = (
    await createAd(key, userId, {
      title: "Volkswagen Golf",
      description: "Zuinige auto met trekhaak",
      price: { model: "fixed", price: 900000 },
      folderId,
      ...car("Volkswagen", 85000, ["airco", "trekhaak"]),
    })
  ).adId;
  ids.yaris = (
    await createAd(key, userId, {
      title: "Toyota Yaris hybride",
      description: "Weinig kilometers",
      price: { model: "fixed", price: 1200000 },
      folderId,
      type: "demand",
      ...car("Toyota", 40000, ["airco"]),
    })
  ).adId;
  ids.table = (
    await createAd(key, userId, {
      title: "Eiken eettafel",
      description: "Massief eiken tafel",
      categoryId: 9302,
      price: { model: "see description" },
      status: "archive",
    })
  ).adId;
  ids.lamp = (
    await createAd(key, userId, {
      title: "Design lamp",
      description: "Lamp met dimmer",
      categoryId: 9305,
      price: { model: "fixed", price: 5000 },
    })
  ).adId;
  const stamp = (ad: number, created: string, updated: string) =>
    env.DB.prepare("UPDATE ads SET created_at = ?, updated_at = ? WHERE id = ?").bind(created, updated, ad).run();
  await stamp(ids.sofa, "2026-01-01T10:00:00.000Z", "2026-03-05T10:00:00.000Z");
  await stamp(ids.golf, "2026-01-02T10:00:00.000Z", "2026-03-01T10:00:00.000Z");
  await stamp(ids.yaris, "2026-01-03T10:00:00.000Z", "2026-03-04T10:00:00.000Z");
  await stamp(ids.table, "2026-01-04T10:00:00.000Z", "2026-03-02T10:00:00.000Z");
  await stamp(ids.lamp, "2026-01-05T10:00:00.000Z", "2026-03-03T10:00:00.000Z");
  const publish = (ad: number, portal: string, active: number, closeDate: string) =>
    env.DB.prepare("INSERT INTO ad_publications (ad_id, portal, active, online, close_date) VALUES (?, ?, ?, ?, ?)")
      .bind(ad, portal, active, active, closeDate)
      .run();
  await publish(ids.golf, "portal_a", 1, "2026-06-10T00:00:00.000Z");
  await publish(ids.yaris, "portal_a", 1, "2026-06-01T00:00:00.000Z");
  await publish(ids.yaris, "portal_b", 1, "2026-07-01T00:00:00.000Z");
  await publish(ids.sofa, "portal_b", 1, "2026-05-01T00:00:00.000Z");
  await publish(ids.lamp, "website", 1, "2026-08-01T00:00:00.000Z");
  await publish(ids.table, "portal_a", 0, "2026-04-01T00:00:00.000Z");
});

const search = async (query: string, client = key) => {
  const answer = await call("GET", `/ads/?userId=${userId}&${query}`, { key: client });
  expectEnvelope(answer, 200);
  return answer.body;
};
const found = async (query: string, client = key) =>
  (await search(query, client)).data.map((ad: { adId: number }) => ad.adId);
const named = (...names: string[]) => names.map((n) => ids[n as keyof typeof ids]);

describe("GET /ads/ search", () => {
  it("orders by created ascending by default, and pages", async () => {
    expect(await found("")).toEqual(named("sofa", "golf", "yaris", "table", "lamp"));
    const page = await search("itemsPerPage=2&page=2");
    expect(page).toMatchObject({ totalItems: 5, totalInSet: 2, page: 2, itemsPerPage: 2 });
    expect(page.data.map((ad: { adId: number }) => ad.adId)).toEqual(named("yaris", "table"));
  });

  it.each([
    ["price", false, ["lamp", "sofa", "golf", "yaris"]],
    ["price", true, ["yaris", "golf", "sofa", "lamp"]],
    ["created", true, ["lamp", "table", "yaris", "golf", "sofa"]],
    ["updated", false, ["golf", "table", "lamp", "yaris", "sofa"]],
    ["title", false, ["lamp", "table", "sofa", "yaris", "golf"]],
    ["closeDatePortalA", false, ["table", "yaris", "golf"]],
    ["closeDatePortalB", true, ["yaris", "sofa"]],
    ["closeDate", false, ["table", "sofa", "yaris", "golf", "lamp"]],
    ["closeDateMeta", false, ["lamp"]],
  ])("orders by %s (descending %s)", async (field, descending, expected) => {
    const order = await found(`order[0][field]=${field}&order[0][descending]=${descending}`);
    // Ads without a value for the field sort first ascending (SQLite NULLs first); compare the ones with a value.
    expect(order.filter((id: number) => named(...expected).includes(id))).toEqual(named(...expected));
  });

  it("takes adId as one id, an array or a comma list", async () => {
    expect(await found(`adId=${ids.golf}`)).toEqual(named("golf"));
    expect(await found(`adId[]=${ids.lamp}&adId[]=${ids.sofa}`)).toEqual(named("sofa", "lamp"));
    expect(await found(`adId=${ids.lamp},${ids.golf}`)).toEqual(named("golf", "lamp"));
    expectEnvelope(await call("GET", "/ads/?adId=1;2", { key }), 400);
  });

  it("filters by the searchable fields", async () => {
    expect(await found("status=archive")).toEqual(named("table"));
    expect(await found("type=demand")).toEqual(named("yaris"));
    expect(await found(`folderId=${(await search(`adId=${ids.golf}`)).data[0]?.folderId}`)).toEqual(
      named("golf", "yaris"),
    );
    expect(await found(`categoryId=${CAR_CATEGORY}`)).toEqual(named("golf", "yaris"));
    expect(await found("groupId=93")).toEqual(named("sofa", "table", "lamp"));
    expect(await found("categoryDescription=verlicht")).toEqual(named("lamp"));
    expect(await found("groupDescription=Auto")).toEqual(named("golf", "yaris"));
    expect(await found("title=bank")).toEqual(named("sofa"));
    expect(await found("description=eiken")).toEqual(named("table"));
    expect(await found("title=100%25")).toEqual([]);
  });

  it("searches keywords in title and description, as prefixes, and misses cleanly", async () => {
    expect(await found("searchkeyword=trekhaak")).toEqual(named("golf"));
    expect(await found("searchkeyword=TOYOTA")).toEqual(named("yaris"));
    expect(await found("searchkeyword=comfort")).toEqual(named("sofa"));
    expect(await found("searchkeyword=eiken%20tafel")).toEqual(named("table"));
    expect(await found("searchkeyword=fiets")).toEqual([]);
    expect(await found("searchkeyword=%22bank%20OR%20lamp%22")).toEqual([]);
    expect(await found("searchkeyword=NEAR(bank)")).toEqual([]);
  });

  it("finds ads active on a portal, and inverts with !", async () => {
    expect(await found("searchportal=portal_a")).toEqual(named("golf", "yaris"));
    expect(await found("searchportal=portal_b")).toEqual(named("sofa", "yaris"));
    expect(await found("searchportal=website")).toEqual(named("lamp"));
    expect(await found("searchportal=!portal_a")).toEqual(named("sofa", "table", "lamp"));
    const meta = await call("GET", `/ads/?userId=${userId}&searchportal=meta`, { key });
    expectEnvelope(meta, 403);
    expect(await found("searchportal=meta", internalKey)).toEqual(named("sofa", "golf", "yaris", "lamp"));
    expect(await found("searchportal=!meta", internalKey)).toEqual(named("table"));
    expectEnvelope(await call("GET", "/ads/?searchportal=elsewhere", { key }), 400);
  });

  it("searches attributes: equals, lists of a multi-value key, and ranges", async () => {
    const attr = (i: number, k: string, v: string) =>
      `searchattributes[${i}][portal]=portal_a&searchattributes[${i}][locale]=nl_NL&searchattributes[${i}][key]=${k}&${v}`;
    const base = `categoryId=${CAR_CATEGORY}`;
    // Both cars are in the folder: with it, the search reads its ads; without, the attribute index answers.
    const found = async (query: string) => {
      const indexed = await search(query);
      const read = await search(`${query}&folderId=${folderId}`);
      expect([indexed.data, indexed.totalItems]).toEqual([read.data, read.totalItems]);
      expect(indexed.totalItems).toBe(indexed.data.length);
      return indexed.data.map((ad: { adId: number }) => ad.adId);
    };
    expect(await found(`${base}&${attr(0, "brand", "searchattributes[0][value_equals]=Toyota")}`)).toEqual(
      named("yaris"),
    );
    expect(await found(`${base}&${attr(0, "options", "searchattributes[0][value_equals_list][]=trekhaak")}`)).toEqual(
      named("golf"),
    );
    expect(
      await found(
        `${base}&${attr(0, "options", "searchattributes[0][value_equals_list][]=airco&searchattributes[0][value_equals_list][]=navigatie")}`,
      ),
    ).toEqual(named("golf", "yaris"));
    // The golf has both options: it is one match, not two.
    expect(
      await found(
        `${base}&${attr(0, "options", "searchattributes[0][value_equals_list][]=airco&searchattributes[0][value_equals_list][]=trekhaak")}`,
      ),
    ).toEqual(named("golf", "yaris"));
    expect(await found(`${base}&${attr(0, "mileage", "searchattributes[0][value_lessequal]=50000")}`)).toEqual(
      named("yaris"),
    );
    expect(await found(`${base}&${attr(0, "mileage", "searchattributes[0][value_greaterequal]=50000")}`)).toEqual(
      named("golf"),
    );
    expect(
      await found(
        `${base}&${attr(0, "mileage", "searchattributes[0][value_greaterequal]=30000&searchattributes[0][value_lessequal]=90000")}`,
      ),
    ).toEqual(named("golf", "yaris"));
    expect(
      await found(
        `${base}&${attr(0, "mileage", "searchattributes[0][value_greaterequal]=30000")}&${attr(1, "brand", "searchattributes[1][value_equals]=Volkswagen")}`,
      ),
    ).toEqual(named("golf"));

    const withoutCategory = await call("GET", `/ads/?${attr(0, "brand", "searchattributes[0][value_equals]=Toyota")}`, {
      key,
    });
    expectEnvelope(withoutCategory, 400);
    expect(withoutCategory.body.errors).toEqual(["categoryId: is required with searchattributes"]);
    const withoutValue = await call("GET", `/ads/?${base}&${attr(0, "brand", "x=1")}`, { key });
    expectEnvelope(withoutValue, 400);
  });

  it("searches by manufacturer presence in categories with product-safety attributes", async () => {
    const manufacturer = await call("POST", "/manufacturers/", {
      key,
      body: manufacturerBody(userId, { categoryId: 9305 }),
    });
    await call("POST", "/manufacturers/batch/", {
      key,
      body: { manufacturerId: manufacturer.body.data.manufacturerId, userId },
    });
    expect(await found("searchmanufacturer=true")).toEqual(named("lamp"));
    // Cars carry no product-safety attributes, so they take part in neither.
    expect(await found("searchmanufacturer=false")).toEqual(named("sofa", "table"));
  });

  it("bounds paging: 1-25 full, 1-500 simple", async () => {
    for (const bad of ["itemsPerPage=0", "itemsPerPage=26", "simple=true&itemsPerPage=501", "page=0"]) {
      const answer = await call("GET", `/ads/?${bad}`, { key });
      expectEnvelope(answer, 400);
    }
    // One message per problem, naming the bound that applies.
    for (const [query, message] of [
      ["itemsPerPage=100000", "itemsPerPage: must be at most 25 (500 with simple=true)"],
      ["simple=true&itemsPerPage=100000", "itemsPerPage: must be at most 500"],
    ]) {
      const answer = await call("GET", `/ads/?${query}`, { key });
      expect(answer.body.errors, query).toEqual([message]);
    }
    expect((await call("GET", "/ads/?itemsPerPage=25", { key })).status).toBe(200);
    const simple = await search("simple=1&itemsPerPage=500");
    expect(simple.itemsPerPage).toBe(500);
    expect(simple.data[0]).not.toHaveProperty("attributes");
    expect(simple.data[0]).not.toHaveProperty("contact");
    expect(simple.data[0]).not.toHaveProperty("settings");
    expect(simple.data[0]).toHaveProperty("images", false);
    expect(simple.data[0]).toHaveProperty("portals");
  });

  it("answers a keyword search in the order, count and pages of the same ads found without one", async () => {
    const seller = (await createUser(key)).userId;
    const titles = [
      "beta Zoekwoord",
      "Alpha zoekwoord",
      "gamma zoekwoord",
      "Delta zoekwoord",
      "alpha Zoekwoord",
      "epsilon",
    ];
    for (const [i, title] of titles.entries()) {
      await createAd(key, seller, {
        title,
        price: { model: "fixed", price: [500, 100, 900, 100, 300, 700][i] },
        // The even ones in group 93 (Huis en Inrichting), for the filter that joins the catalogue.
        categoryId: i % 2 === 0 ? SOFA_CATEGORY : PAID_CATEGORY,
      });
    }
    const list = async (query: string) => {
      const answer = await call("GET", `/ads/?userId=${seller}&itemsPerPage=2&${query}`, { key });
      expectEnvelope(answer, 200);
      return { ids: answer.body.data.map((ad: { adId: number }) => ad.adId), total: answer.body.totalItems };
    };
    for (const [filter, total] of [
      ["", 5],
      ["groupId=93", 3],
    ] as const) {
      for (const order of [
        "",
        "order[0][field]=price&order[1][field]=title",
        "order[0][field]=title&order[0][descending]=true",
      ]) {
        for (const page of [1, 2, 3, 4]) {
          // The title filter (LIKE) takes the plain page's way; the keyword search lists its matches first.
          const query = `${filter}&${order}&page=${page}`;
          const plain = await list(`title=zoekwoord&${query}`);
          expect(await list(`searchkeyword=zoekwoord&${query}`)).toEqual(plain);
          expect(plain.total).toBe(total);
          expect(plain.ids).toHaveLength(Math.max(0, Math.min(2, total - (page - 1) * 2)));
        }
      }
    }
    expect(await list("searchkeyword=nergens")).toEqual({ ids: [], total: 0 });
  });

  it("serves from the cache until an ad changes", async () => {
    const first = await search("useCache=1&status=active");
    expect(first.fromCache).toBe(false);
    expect((await search("useCache=1&status=active")).fromCache).toBe(true);
    await call("PATCH", "/ads/", { key, body: { adId: ids.lamp, status: "active" } });
    expect((await search("useCache=1&status=active")).fromCache).toBe(false);
  });

  it("costs one D1 round trip for a full page of 25 ads, a simple page of 500 and a search, whatever they hold", async () => {
    for (let i = 0; i < 22; i += 1) {
      await createAd(key, userId, {
        title: `Extra advertentie ${i}`,
        ...car("Audi", 1000 * i, ["airco", "navigatie"]),
      });
    }
    const counter = countingD1(env.DB);
    const db = getDb(counter.d1);
    const caller = callerOf({ id: clientId, internal: false, partner: true });
    const ctx = { db, env: onTestShard(env, 1, counter.d1), caller, mediaBase: "/media/" };
    const page = await searchAds(ctx, {
      page: 1,
      itemsPerPage: 25,
      simple: false,
      userId,
    });
    expect(page.items).toHaveLength(25);
    // Count, page and the details of all 25 in one batch; a second only when the catalogue is not cached yet.
    expect(counter.roundTrips).toBeGreaterThanOrEqual(1);
    expect(counter.roundTrips).toBeLessThanOrEqual(2);
    // With the catalogue already cached in the isolate, one: for a full page and a simple page of 500.
    await loadCatalogue(db);
    counter.reset();
    const again = await searchAds(ctx, { page: 1, itemsPerPage: 25, simple: false, userId });
    expect(counter.roundTrips).toBe(1);
    counter.reset();
    const simple = await searchAds(ctx, { page: 1, itemsPerPage: 500, simple: true, userId });
    expect(counter.roundTrips).toBe(1);
    // Keyword and attribute searches too: their count and page are one batch like any other page.
    counter.reset();
    const keyword = await searchAds(ctx, { page: 1, itemsPerPage: 25, simple: false, searchkeyword: "extra" });
    const attribute = await searchAds(ctx, {
      page: 1,
      itemsPerPage: 25,
      simple: false,
      searchattributes: [{ portal: "portal_a", locale: "nl_NL", key: "brand", value_equals: "Audi" }],
    });
    expect(counter.roundTrips).toBe(2);
    expect([keyword.totalItems, attribute.totalItems]).toEqual([22, 22]);
    // The page is the same as the views of its ads read one by one.
    const rows = await db.select().from(ads).where(eq(ads.userId, userId)).orderBy(asc(ads.createdAt), asc(ads.id));
    const views = await Promise.all(rows.map((row) => getAd(ctx, row.id)));
    expect(again.items).toEqual(views.slice(0, 25));
    // A simple view is the full view without the details, with the primary image only.
    expect(simple.items).toEqual(
      views.map(({ description: _d, attributes: _a, settings: _s, contact: _c, provider: _p, images, ...base }) => ({
        ...base,
        images: images ? images.slice(0, 1) : images,
      })),
    );
    expect(simple.totalItems).toBe(rows.length);
  });
});

describe("GET /ads/ searches one index answers by itself", () => {
  const hits = async (client: string, query: string) => {
    const answer = await call("GET", `/ads/?${query}`, { key: client });
    expectEnvelope(answer, 200);
    return { ids: answer.body.data.map((ad: { adId: number }) => ad.adId), total: answer.body.totalItems };
  };

  it("finds only the ads the caller may see, as users are deleted or move to another client", async () => {
    const a = await newClient({ partner: true });
    // In a's client group: a user moves only within its group.
    const b = await newClient({ partner: true, groupId: await groupOf(a.client.id) });
    const internal = (await newClient({ internal: true })).key;
    const [sellerA, sellerB] = [(await createUser(a.key)).userId, (await createUser(b.key)).userId];
    const word = `zichtbaar${Date.now()}`;
    const adsA = [];
    for (const title of [`${word} een`, `${word} twee`, "iets anders"]) {
      adsA.push((await createAd(a.key, sellerA, { title })).adId);
    }
    const adB = (await createAd(b.key, sellerB, { title: `${word} drie` })).adId;
    const [a1, a2, a3] = adsA;
    const usedSofas =
      "categoryId=9301&searchattributes[0][portal]=portal_a&searchattributes[0][key]=condition" +
      "&searchattributes[0][value_equals]=gebruikt";

    expect(await hits(a.key, `searchkeyword=${word}`)).toEqual({ ids: [a1, a2], total: 2 });
    expect(await hits(b.key, `searchkeyword=${word}`)).toEqual({ ids: [adB], total: 1 });
    // The attribute index answers the same way: a client's used sofas are its own.
    expect(await hits(a.key, usedSofas)).toEqual({ ids: adsA, total: 3 });
    expect(await hits(b.key, usedSofas)).toEqual({ ids: [adB], total: 1 });
    expect(await hits(a.key, `${usedSofas}&userId=${sellerB}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(internal, `searchkeyword=${word}`)).toEqual({ ids: [a1, a2, adB], total: 3 });
    expect(await hits(a.key, `searchkeyword=${word}&order[0][field]=created&order[0][descending]=true`)).toEqual({
      ids: [a2, a1],
      total: 2,
    });
    // Another client's user, named in the search, is not a way in.
    expect(await hits(a.key, `searchkeyword=${word}&userId=${sellerB}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(internal, `searchkeyword=${word}&userId=${sellerB}`)).toEqual({ ids: [adB], total: 1 });
    // The audience tokens are not words of the ads.
    expect(await hits(a.key, `searchkeyword=c${a.client.id}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(a.key, `searchkeyword=u${sellerA}`)).toEqual({ ids: [], total: 0 });

    // A new title is found by its words only; a deleted ad is not found.
    expectEnvelope(await call("PUT", "/ads/", { key: a.key, body: { adId: a2, title: "hernoemd" } }), 200);
    expect(await hits(a.key, `searchkeyword=${word}`)).toEqual({ ids: [a1], total: 1 });
    expect((await hits(a.key, "searchkeyword=hernoemd")).ids).toEqual([a2]);
    expectEnvelope(await call("DELETE", `/ads/${a1}`, { key: a.key }), 200);
    expect(await hits(a.key, `searchkeyword=${word}`)).toEqual({ ids: [], total: 0 });

    // A user moved to another client takes its ads along; a deleted user's ads are found by nobody.
    const moved = await call("PUT", "/users/", { key: internal, body: { userId: sellerB, clientId: a.client.id } });
    expectEnvelope(moved, 200);
    expect(await hits(a.key, `searchkeyword=${word}`)).toEqual({ ids: [adB], total: 1 });
    expect(await hits(b.key, `searchkeyword=${word}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(a.key, usedSofas)).toEqual({ ids: [a2, a3, adB], total: 3 });
    expect(await hits(b.key, usedSofas)).toEqual({ ids: [], total: 0 });
    expectEnvelope(await call("DELETE", `/users/${sellerB}`, { key: a.key }), 200);
    expect(await hits(a.key, `searchkeyword=${word}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(internal, `searchkeyword=${word}`)).toEqual({ ids: [], total: 0 });
    expect(await hits(a.key, usedSofas)).toEqual({ ids: [a2, a3], total: 2 });
    expect(await hits(a.key, `${usedSofas}&order[0][field]=created&order[0][descending]=true`)).toEqual({
      ids: [a3, a2],
      total: 2,
    });
    // The same answers where another filter sends the search the general way (ads joined to their users).
    expect(await hits(internal, `searchkeyword=${word}&status=active`)).toEqual({ ids: [], total: 0 });
    expect(await hits(a.key, "searchkeyword=hernoemd&status=active")).toEqual({ ids: [a2], total: 1 });
  });

  it("orders by creation as by id: a new ad is never dated before the newest one, whatever the clock says", async () => {
    const seller = (await createUser(key)).userId;
    const first = (await createAd(key, seller, { title: "klok een" })).adId;
    const ahead = new Date(Date.now() + 3_600_000).toISOString();
    await env.DB.prepare("UPDATE ads SET created_at = ? WHERE id = ?").bind(ahead, first).run();
    const second = (await createAd(key, seller, { title: "klok twee" })).adId;
    const [stored] = await getDb(env.DB).select().from(ads).where(eq(ads.id, second));
    expect(stored?.createdAt).toBe(ahead);
    const listed: { adId: number; created: string }[] = (await call("GET", `/ads/?userId=${seller}`, { key })).body
      .data;
    expect(listed.map((ad) => ad.adId)).toEqual([first, second]);
    expect(listed[1]?.created).toBe(listed[0]?.created);
  });
});
