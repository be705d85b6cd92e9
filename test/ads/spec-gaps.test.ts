import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, newClient } from "../harness/api";
import { activate, adBody, createAd, createUser, GPSR_VALUES, SOFA_CATEGORY, userBody } from "../harness/data";
import { connectPortal } from "../harness/marketplace";

let key: string;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
});

describe("POST /imagestatus/ in the spec's path forms", () => {
  it("answers the user's jobs at /imagestatus/<userId>/ and one ad's at /imagestatus/<userId>/<adId>", async () => {
    const { userId } = await createUser(key);
    const first = await createAd(key, userId);
    const second = await createAd(key, userId);
    for (const ad of [first, second]) {
      expectEnvelope(
        await call("PUT", `/images/${ad.adId}`, {
          key,
          body: { images: [{ image: { url: "http://images.test/red.png" } }] },
        }),
        200,
      );
    }
    const all = await eventually(async () => {
      const answer = await call("POST", `/imagestatus/${userId}/`, { key });
      return answer.status === 200 && answer.body.data.length === 2 ? answer : undefined;
    }, "both image jobs");
    expectEnvelope(all, 200);
    const one = await call("POST", `/imagestatus/${userId}/${second.adId}`, { key });
    expectEnvelope(one, 200);
    expect(one.body.data.map((job: { adId: number }) => job.adId)).toEqual([second.adId]);
    const named = await call("POST", `/imagestatus/${userId}`, { key, body: { adId: [first.adId] } });
    expect(named.body.data.map((job: { adId: number }) => job.adId)).toEqual([first.adId]);
    const other = await newClient({ partner: true });
    expectError(await call("POST", `/imagestatus/${userId}/`, { key: other.key }), "user_not_found");
  });
});

describe("GET /folders/ paging and total", () => {
  it("pages by page and itemsPerPage by default, and total=true answers the complete list", async () => {
    const { userId } = await createUser(key);
    for (const description of ["Auto's", "Fietsen", "Meubels"]) {
      expectEnvelope(await call("POST", "/folders/", { key, body: { userId, description } }), 200);
    }
    const paged = await call("GET", `/folders/${userId}?itemsPerPage=1&page=2`, { key });
    expectEnvelope(paged, 200);
    expect(paged.body.data.map((f: { description: string }) => f.description)).toEqual(["Fietsen"]);
    expect(paged.body).toMatchObject({ totalItems: 3, page: 2, itemsPerPage: 1 });
    const whole = await call("GET", `/folders/${userId}?itemsPerPage=1&page=2&total=true`, { key });
    expect(whole.body.data.map((f: { description: string }) => f.description)).toEqual([
      "Auto's",
      "Fietsen",
      "Meubels",
    ]);
    expect(whole.body.data[0]).toMatchObject({ total: 0 });
  });
});

describe("POST /attributes/ with userId", () => {
  const portalsOf = async (body: Record<string, unknown>) => {
    const answer = await call("POST", "/attributes/", { key, body: { categoryId: [SOFA_CATEGORY], ...body } });
    expectEnvelope(answer, 200);
    return defined(answer.body.data[0]).attributes.map((collection: { portal: string }) => collection.portal);
  };

  it("shows only the portals the user is connected to, and the website's own definitions", async () => {
    const user = await createUser(key);
    await activate(key, user);
    expect(await portalsOf({})).toEqual(["portal_a", "portal_b", "portal_own"]);
    expect(await portalsOf({ userId: user.userId })).toEqual(["portal_own"]);
    await connectPortal(key, user.userId, "portal_a");
    expect(await portalsOf({ userId: user.userId, useCache: true })).toEqual(["portal_a", "portal_own"]);
  });

  it("keeps portal_own to the catalogue: an ad's attributes carry portal_a and portal_b sets only (docs/calling.md)", async () => {
    const user = await createUser(key);
    await activate(key, user);
    const own = { portal: "portal_own", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] };
    const refused = await call("POST", "/ads/", { key, body: adBody(user.userId, { attributes: [own] }) });
    expectError(refused, "validation_failed");
    expect(refused.body.errorDetails?.[0]?.field).toBe("attributes[0].portal");
    // A publish to the website checks no attributes: an ad without any is taken.
    const bare = await createAd(key, user.userId, { attributes: [], externalAdId: 9_101 });
    const published = await call("POST", "/publish/", {
      key,
      body: { userId: user.userId, adId: bare.adId, portal: "website" },
    });
    expectEnvelope(published, 200);
  });

  it("types minimum and maximum as ints, 0 where a definition has no bound", async () => {
    const answer = await call("POST", "/attributes/", { key, body: { categoryId: [9101, SOFA_CATEGORY] } });
    const bounds = answer.body.data.flatMap(
      (entry: { attributes: { attributes: { minimum: unknown; maximum: unknown; key: string }[] }[] }) =>
        entry.attributes.flatMap((collection) => collection.attributes),
    );
    for (const attribute of bounds) {
      expect(Number.isInteger(attribute.minimum), attribute.key).toBe(true);
      expect(Number.isInteger(attribute.maximum), attribute.key).toBe(true);
    }
    expect(bounds.find((a: { key: string }) => a.key === "year")).toMatchObject({ minimum: 1900 });
    expect(bounds.find((a: { key: string }) => a.key === "condition")).toMatchObject({ minimum: 0, maximum: 0 });
  });
});

describe("the user's settings as defaults of a new ad", () => {
  it("fills condition and delivery where the ad leaves them out, and takes showcontact as the ad's setting", async () => {
    const { userId } = await createUser(key);
    expectEnvelope(
      await call("POST", "/user/settings/", {
        key,
        body: {
          userId,
          showcontact: false,
          attributes: [
            { key: "condition", value: "nieuw" },
            { key: "delivery", value: "verzenden" },
          ],
        },
      }),
      200,
    );
    const ad = await createAd(key, userId, {
      attributes: [{ portal: "portal_a", locale: "nl_NL", values: GPSR_VALUES }],
    });
    const setOf = (portal: string) =>
      Object.fromEntries(
        defined(ad.attributes.find((set: { portal: string }) => set.portal === portal)).attributes.map(
          (a: { key: string; value: unknown }) => [a.key, a.value],
        ),
      );
    expect(setOf("portal_a")).toMatchObject({ condition: "nieuw", delivery: "verzenden" });
    expect(setOf("portal_b")).toMatchObject({ condition: "nieuw" });
    expect(ad.settings).toEqual([
      { portal: "portal_a", showcontact: false, autoreplace: false, video: null },
      { portal: "portal_b", showcontact: false, autoreplace: false, video: null },
    ]);
    // What the ad gives wins over the defaults.
    const own = await createAd(key, userId, {
      attributes: [
        { portal: "portal_a", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }, ...GPSR_VALUES] },
      ],
      settings: [{ portal: "portal_a", showcontact: true }],
    });
    expect(defined(own.attributes[0]).attributes[0]).toMatchObject({ key: "condition", value: "gebruikt" });
    expect(own.settings[0]).toMatchObject({ portal: "portal_a", showcontact: true });
  });
});

describe("externalUserId", () => {
  it("is unique per client: a second user with the same one is refused with 409 naming it", async () => {
    const client = await newClient({ partner: true });
    expectEnvelope(await call("POST", "/users/", { key: client.key, body: userBody({ externalUserId: 4242 }) }), 200);
    const again = await call("POST", "/users/", { key: client.key, body: userBody({ externalUserId: 4242 }) });
    expectError(again, "external_user_id_taken");
    expect(again.body.errors).toEqual(["externalUserId: 4242 is already used by another user of this client"]);
    // Another client's backend has its own ids.
    const other = await newClient({ partner: true });
    expectEnvelope(await call("POST", "/users/", { key: other.key, body: userBody({ externalUserId: 4242 }) }), 200);
    // A change to a taken id is refused as well (internal clients may change it).
    const internal = await newClient({ internal: true });
    const first = await call("POST", "/users/", { key: internal.key, body: userBody({ externalUserId: 5151 }) });
    const second = await call("POST", "/users/", { key: internal.key, body: userBody({ externalUserId: 5152 }) });
    const changed = await call("PUT", "/users/", {
      key: internal.key,
      body: { userId: second.body.data.userId, externalUserId: 5151 },
    });
    expectError(changed, "external_user_id_taken");
    expect(first.body.data.externalUserId).toBe(5151);
  });
});

describe("the description's minimum length", () => {
  it("counts the text left after sanitising, on create and on update", async () => {
    const { userId } = await createUser(key);
    for (const description of ["<script>alert(1)</script>ab", "<b></b><iframe src=x></iframe>"]) {
      const created = await call("POST", "/ads/", {
        key,
        body: {
          userId,
          externalAdId: 1,
          categoryId: SOFA_CATEGORY,
          title: "Leren bank",
          description,
          attributes: [],
          price: { model: "see description" },
        },
      });
      expectError(created, "validation_failed");
      expect(created.body.errors).toEqual(["description: must be 5-65536 characters after sanitising"]);
    }
    const ad = await createAd(key, userId);
    const updated = await call("PUT", "/ads/", {
      key,
      body: { adId: ad.adId, description: "<script>alert(1)</script>ab" },
    });
    expectError(updated, "validation_failed");
    const stored = await call("GET", `/ads/?adId=${ad.adId}`, { key });
    expect(defined(stored.body.data[0])).toMatchObject({ description: ad.description });
  });
});
