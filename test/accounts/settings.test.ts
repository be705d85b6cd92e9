import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, twoClients } from "../harness/api";
import { createUser } from "../harness/data";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

describe("user settings", () => {
  it("starts from the spec's defaults, at both paths", async () => {
    const user = await createUser(key);
    const expected = {
      userId: user.userId,
      mainUserId: null,
      walletUserId: null,
      maxContacts: 25,
      status: "locked",
      type: "supply",
      allowbids: true,
      showcontact: true,
      itemsPerPage: 25,
      maxImages: 24,
      groupId: null,
      categoryId: null,
      attributes: [],
      budgetNotifyLimit: 0,
    };
    for (const path of [
      `/user/settings/${user.userId}`,
      `/usersettings/${user.userId}/`,
      `/user/settings/?userId=${user.userId}`,
    ]) {
      const answer = await call("GET", path, { key });
      expectEnvelope(answer, 200);
      expect(answer.body.data).toEqual(expected);
    }
    const missing = await call("GET", "/user/settings/", { key });
    expectEnvelope(missing, 400);
    expect(missing.body.errors[0]).toMatch(/^userId: is required/);
  });

  it("replaces settings with POST; fields not given return to defaults", async () => {
    const user = await createUser(key);
    const first = await call("POST", "/user/settings/", {
      key,
      body: {
        userId: user.userId,
        type: "demand",
        itemsPerPage: 50,
        attributes: [{ key: "condition", value: "gebruikt" }],
      },
    });
    expectEnvelope(first, 200);
    expect(first.body.data).toMatchObject({
      type: "demand",
      itemsPerPage: 50,
      attributes: [{ key: "condition", value: "gebruikt" }],
    });
    const second = await call("POST", "/usersettings/", { key, body: { userId: user.userId, showcontact: false } });
    expect(second.body.data).toMatchObject({ type: "supply", itemsPerPage: 25, showcontact: false, attributes: [] });
  });

  it.each([
    [{ itemsPerPage: 0 }, "itemsPerPage: must be at least 1"],
    [{ itemsPerPage: 101 }, "itemsPerPage: must be at most 100"],
    [{ status: "blocked" }, "status: must be one of: active, locked"],
    [{ type: "sale" }, "type: must be one of: supply, demand"],
    [{ budgetNotifyLimit: 700 }, "budgetNotifyLimit: must be one of: 0, 500, 1000, 2500, 5000, 10000, 15000, 20000"],
    [{ attributes: [{ key: "condition", value: "kapot" }] }, "attributes[0].value: must be one of:"],
    [{ attributes: [{ key: "colour", value: "rood" }] }, "attributes[0].key: "],
  ])("refuses %j", async (overrides, message) => {
    const user = await createUser(key);
    const answer = await call("POST", "/user/settings/", { key, body: { userId: user.userId, ...overrides } });
    expectEnvelope(answer, 400);
    expect(answer.body.errors.some((e: string) => e.startsWith(message))).toBe(true);
  });

  it("reserves mainUserId, walletUserId, maxContacts and maxImages for internal clients", async () => {
    const user = await createUser(key);
    const payer = await createUser(key, { externalUserId: 2 });
    for (const field of ["mainUserId", "walletUserId", "maxContacts", "maxImages"]) {
      const value = field.endsWith("UserId") ? payer.userId : 5;
      const answer = await call("POST", "/user/settings/", { key, body: { userId: user.userId, [field]: value } });
      expectEnvelope(answer, 403);
      expect(answer.body.errors).toEqual([`${field}: may only be set by internal clients`]);
    }
    const internal = await call("POST", "/user/settings/", {
      key: internalKey,
      body: { userId: user.userId, walletUserId: payer.userId, maxImages: 10 },
    });
    expect(internal.body.data).toMatchObject({ walletUserId: payer.userId, maxImages: 10 });
    const unknown = await call("POST", "/user/settings/", {
      key: internalKey,
      body: { userId: user.userId, walletUserId: 99999999 },
    });
    expectEnvelope(unknown, 400);
    expect(unknown.body.errors).toEqual(["walletUserId: user 99999999 not found"]);
    // A partner's later POST keeps the internal-only limits it cannot send.
    const kept = await call("POST", "/user/settings/", { key, body: { userId: user.userId } });
    expect(kept.body.data.maxImages).toBe(10);
  });

  it("patches only showcontact, attributes and budgetNotifyLimit", async () => {
    const user = await createUser(key);
    const patched = await call("PATCH", "/user/settings/", {
      key,
      body: {
        userId: user.userId,
        showcontact: false,
        budgetNotifyLimit: 2500,
        attributes: [{ key: "delivery", value: "verzenden" }],
      },
    });
    expectEnvelope(patched, 200);
    expect(patched.body.data).toMatchObject({
      showcontact: false,
      budgetNotifyLimit: 2500,
      attributes: [{ key: "delivery", value: "verzenden" }],
      type: "supply",
      itemsPerPage: 25,
    });
    const refused = await call("PATCH", "/usersettings/", {
      key,
      body: { userId: user.userId, status: "active", itemsPerPage: 5 },
    });
    expectEnvelope(refused, 400);
    expect(refused.body.errors).toEqual([
      "status: cannot be patched; patchable fields are showcontact, attributes, budgetNotifyLimit",
      "itemsPerPage: cannot be patched; patchable fields are showcontact, attributes, budgetNotifyLimit",
    ]);
    expectEnvelope(await call("PATCH", "/user/settings/", { key, body: { userId: user.userId } }), 400);
  });
});

describe("user ad settings", () => {
  it("creates or replaces per portal and sanitises the HTML", async () => {
    const user = await createUser(key);
    const answer = await call("POST", "/user/adsettings/", {
      key,
      body: {
        userId: user.userId,
        settings: [
          {
            portal: "portal_a",
            header:
              '<p class="x" onclick="evil()">Welkom <b>bij</b> ons<script>alert(1)</script></p><div>Tekst</div><!-- c --><img src=x onerror=alert(1)>',
            footer: "<ul><li>Garantie</li></ul><a href='https://x'>link</a>",
          },
          { portal: "website", header: "Hallo", footer: "Tot ziens", allowContactByEmail: false },
        ],
      },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual({
      userId: user.userId,
      settings: [
        {
          portal: "portal_a",
          header: "<p>Welkom <b>bij</b> ons</p>Tekst",
          footer: "<ul><li>Garantie</li></ul>link",
          allowContactByEmail: true,
        },
        { portal: "website", header: "Hallo", footer: "Tot ziens", allowContactByEmail: false },
      ],
    });
    await call("POST", "/user/adsettings/", {
      key,
      body: { userId: user.userId, settings: [{ portal: "portal_a", header: "Nieuw", footer: "" }] },
    });
    const one = await call("GET", `/user/adsettings/${user.userId}/portal_a`, { key });
    expect(one.body.data.settings).toEqual([
      { portal: "portal_a", header: "Nieuw", footer: "", allowContactByEmail: true },
    ]);
    expect((await call("GET", `/user/adsettings/${user.userId}`, { key })).body.data.settings).toHaveLength(2);
  });

  it("refuses headers over 16,384 characters, unknown portals and repeated portals", async () => {
    const user = await createUser(key);
    const cases = [
      [{ portal: "portal_a", header: "x".repeat(16385), footer: "" }],
      [{ portal: "meta", header: "", footer: "" }],
      [
        { portal: "portal_b", header: "", footer: "" },
        { portal: "portal_b", header: "", footer: "" },
      ],
    ];
    const expected = [
      "settings[0].header: must be at most 16384 characters",
      "settings[0].portal: must be one of",
      "settings: each portal may appear once",
    ];
    for (const [i, settings] of cases.entries()) {
      const answer = await call("POST", "/user/adsettings/", { key, body: { userId: user.userId, settings } });
      expectEnvelope(answer, 400);
      expect(answer.body.errors[0]?.startsWith(expected[i] as string), answer.body.errors[0]).toBe(true);
    }
    expectEnvelope(await call("GET", `/user/adsettings/${user.userId}/meta`, { key }), 400);
  });
});

/** Every field a partner may not set, per resource and where it is read; a partner's write keeps each as it is. */
const INTERNAL_ONLY_FIELDS = {
  user: ["clientId", "externalUserId", "subscriptions"],
  settings: ["mainUserId", "walletUserId", "maxContacts", "maxImages"],
} as const;

describe("a partner's write leaves what it may not set as it is", () => {
  it("keeps every internal-only field of users and settings through the partner's writes, and takes them back unchanged", async () => {
    const partnerClientId = (await call("GET", "/client/", { key })).body.data.clientId as number;
    const payer = await createUser(internalKey, { externalUserId: 81 });
    const main = await createUser(key, { externalUserId: 82 });
    const user = await createUser(internalKey, {
      clientId: partnerClientId,
      externalUserId: 83,
      subscriptions: { stock: true, shop: true },
    });
    const set = await call("POST", "/user/settings/", {
      key: internalKey,
      body: { userId: user.userId, mainUserId: main.userId, walletUserId: payer.userId, maxContacts: 7, maxImages: 9 },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const read = async (): Promise<Record<string, Record<string, unknown> | undefined>> => ({
      user: (await call("GET", `/users/${user.userId}`, { key: internalKey })).body.data[0],
      settings: (await call("GET", `/user/settings/${user.userId}`, { key: internalKey })).body.data,
    });
    const pick = (snapshot: Awaited<ReturnType<typeof read>>) =>
      Object.fromEntries(
        Object.entries(INTERNAL_ONLY_FIELDS).flatMap(([resource, fields]) =>
          fields.map((field) => [`${resource}.${field}`, snapshot[resource]?.[field]]),
        ),
      );
    const before = pick(await read());
    expect(before).toMatchObject({
      "settings.walletUserId": payer.userId,
      "user.subscriptions": { stock: true, shop: true },
    });

    const writes = [
      call("POST", "/user/settings/", { key, body: { userId: user.userId, status: "locked" } }),
      call("POST", "/user/settings/", { key, body: { userId: user.userId, status: "active", allowbids: false } }),
      call("PATCH", "/user/settings/", { key, body: { userId: user.userId, showcontact: false } }),
      call("PUT", "/users/", { key, body: { userId: user.userId, city: "Utrecht" } }),
    ];
    for (const write of writes) {
      const answer = await write;
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(pick(await read())).toEqual(before);
    }
    // What the partner read of them it may send back unchanged; a change is still the internal client's.
    const own = (await call("GET", `/user/settings/${user.userId}`, { key })).body.data;
    const back = await call("POST", "/user/settings/", {
      key,
      body: { userId: user.userId, walletUserId: own.walletUserId, maxImages: own.maxImages },
    });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    const [ownUser] = (await call("GET", `/users/${user.userId}`, { key })).body.data;
    const userBack = await call("PUT", "/users/", {
      key,
      body: { userId: user.userId, subscriptions: ownUser?.subscriptions, externalUserId: ownUser?.externalUserId },
    });
    expect(userBack.status, JSON.stringify(userBack.body)).toBe(200);
    expect(pick(await read())).toEqual(before);
    const changed = await call("POST", "/user/settings/", { key, body: { userId: user.userId, maxImages: 3 } });
    expectEnvelope(changed, 403);
    expect(changed.body.errors).toEqual(["maxImages: may only be set by internal clients"]);
  });
});
