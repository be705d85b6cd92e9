import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, newClient } from "../harness/api";
import { createUser, userBody } from "../harness/data";
import { connectPortal } from "../harness/marketplace";

let internalKey: string;
let partnerKey: string;
let partnerClientId: number;

beforeAll(async () => {
  internalKey = (await newClient({ internal: true })).key;
  const partner = await newClient({ partner: true });
  partnerKey = partner.key;
  partnerClientId = partner.client.id;
});

describe("POST /users/", () => {
  it("creates a locked user and answers it with its activation object", async () => {
    const answer = await call("POST", "/users/", { key: partnerKey, body: userBody({ externalUserId: 1001 }) });
    const body = expectEnvelope(answer, 200);
    expect(body.data).toMatchObject({
      clientId: partnerClientId,
      externalUserId: 1001,
      companyName: "Garage De Vries",
      postalCode: "1234 AB",
      county: "UT",
      country: "NL",
      email: "jan@garagedevries.nl",
      contacts: { numberOfContacts: 0, numberOfActiveContacts: 0, contacts: [] },
    });
    expect(body.data.userId).toBeGreaterThan(0);
    expect(body.data.activation.activationtoken).toMatch(/^[\w-]{40,}$/);
    expect(body.data.activation.validUntil).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(body.data.created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    const settings = await call("GET", `/user/settings/${body.data.userId}`, { key: partnerKey });
    expect(settings.body.data.status).toBe("locked");
  });

  it.each([
    [{ companyName: null, lastName: null }, "lastName: either companyName or lastName is required"],
    [{ phone: null }, "phone: either phone or cellular is required"],
    [{ postalCode: "12345" }, "postalCode: must be a valid Dutch postal code (1234 AB)"],
    [{ county: "XX" }, 'county: must be one of: DR, FL, FR, GE, GR, LI, NB, NH, OV, UT, ZE, ZH, ""'],
    [{ country: "DE" }, "county: must be empty outside the Netherlands"],
    [{ country: "Germany" }, "country: must be a two-letter country code (NL), or empty abroad"],
    [{ email: "not-an-address" }, "email: must be a valid e-mail address"],
    [{ gender: "X" }, "gender: must be one of: M, F"],
    [{ companyName: "A" }, "companyName: must be 2-255 characters"],
    [{ firstName: "x".repeat(256) }, "firstName: must be 2-255 characters"],
    [{ city: "U" }, "city: must be 2-255 characters"],
    [{ address: "D" }, "address: must be 2-255 characters"],
    [{ houseNumber: "1".repeat(21) }, "houseNumber: must be at most 20 characters"],
    [{ phone: "1234" }, "phone: must be 5-50 characters"],
    [{ cellular: "1".repeat(51) }, "cellular: must be 5-50 characters"],
    [{ fax: "12" }, "fax: must be 5-50 characters"],
    [{ dateOfBirth: "1990-02-30" }, "dateOfBirth: must be a date yyyy-mm-dd"],
    [{ externalUserId: undefined }, "externalUserId: is required"],
    [{ externalUserId: "abc" }, "externalUserId: must be a number"],
  ])("refuses %j with a message naming the field", async (overrides, message) => {
    const answer = await call("POST", "/users/", { key: partnerKey, body: userBody(overrides) });
    expectEnvelope(answer, 400);
    expect(answer.body.errors).toContain(message);
  });

  it("accepts a user abroad without postal code and county, and cellular instead of phone", async () => {
    const user = await createUser(partnerKey, {
      country: "DE",
      county: "",
      postalCode: "10115",
      phone: null,
      cellular: "+49 151 1234567",
    });
    expect(user).toMatchObject({ country: "DE", county: "", postalCode: "10115", cellular: "+49 151 1234567" });
  });

  it("lets only internal clients set clientId and subscriptions", async () => {
    const refused = await call("POST", "/users/", { key: partnerKey, body: userBody({ clientId: 1 }) });
    expectEnvelope(refused, 403);
    expect(refused.body.errors).toEqual(["clientId: may only be set by internal clients"]);
    expectEnvelope(
      await call("POST", "/users/", { key: partnerKey, body: userBody({ subscriptions: { shop: true } }) }),
      403,
    );

    const user = await createUser(internalKey, { clientId: partnerClientId, subscriptions: { shop: true } });
    expect(user.clientId).toBe(partnerClientId);
    expect(user.subscriptions).toEqual({ stock: false, shop: true });
    // Assigned to the partner, the user is now the partner's.
    expectEnvelope(await call("GET", `/users/${user.userId}/`, { key: partnerKey }), 200);
  });
});

describe("PUT /users/", () => {
  it("updates fields and answers the updated user", async () => {
    const user = await createUser(partnerKey);
    const answer = await call("PUT", "/users/", {
      key: partnerKey,
      body: { userId: user.userId, city: "Amersfoort", firstName: null, externalUserId: user.externalUserId },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toMatchObject({
      userId: user.userId,
      city: "Amersfoort",
      firstName: null,
      companyName: "Garage De Vries",
    });
  });

  it("checks the rules on the user as it would be stored", async () => {
    const user = await createUser(partnerKey, { cellular: null });
    const answer = await call("PUT", "/users/", { key: partnerKey, body: { userId: user.userId, phone: null } });
    expectEnvelope(answer, 400);
    expect(answer.body.errors).toEqual(["phone: either phone or cellular is required"]);
  });

  it("refuses a change of externalUserId or clientId by a non-internal client", async () => {
    const user = await createUser(partnerKey);
    const answer = await call("PUT", "/users/", { key: partnerKey, body: { userId: user.userId, externalUserId: 5 } });
    expectEnvelope(answer, 403);
    expect(answer.body.errors).toEqual(["externalUserId: may only be set by internal clients"]);
    const internal = await call("PUT", "/users/", {
      key: internalKey,
      body: { userId: user.userId, externalUserId: 5 },
    });
    expect(internal.body.data.externalUserId).toBe(5);
  });
});

describe("GET /users/", () => {
  it("pages within 1-100 and counts the client's users only", async () => {
    const { key } = await newClient();
    for (let i = 0; i < 3; i += 1) await createUser(key, { externalUserId: i });
    const first = await call("GET", "/users/?page=1&itemsPerPage=2", { key });
    expectEnvelope(first, 200);
    expect(first.body).toMatchObject({ totalItems: 3, totalInSet: 2, page: 1, itemsPerPage: 2, fromCache: false });
    expect(typeof first.body.speed).toBe("number");
    const second = await call("GET", "/users/?page=2&itemsPerPage=2", { key });
    expect(second.body).toMatchObject({ totalItems: 3, totalInSet: 1, page: 2 });
    expect(second.body.data[0]?.externalUserId).toBe(2);

    expect((await call("GET", "/users/?itemsPerPage=100", { key })).status).toBe(200);
    for (const bad of ["itemsPerPage=0", "itemsPerPage=101", "page=0", "page=x"]) {
      const answer = await call("GET", `/users/?${bad}`, { key });
      expectEnvelope(answer, 400);
      expect(answer.body.errors[0]).toMatch(/^(itemsPerPage|page): /);
    }
    const defaults = await call("GET", "/users/", { key });
    expect(defaults.body).toMatchObject({ page: 1, itemsPerPage: 25 });
  });

  it("answers one user by id, and serves it from the cache until a write", async () => {
    const user = await createUser(partnerKey);
    const first = await call("GET", `/users/${user.userId}?useCache=1`, { key: partnerKey });
    expect(first.body).toMatchObject({ fromCache: false, totalItems: 1 });
    expect(first.body.data[0]?.userId).toBe(user.userId);
    const second = await call("GET", `/users/${user.userId}?useCache=1`, { key: partnerKey });
    expect(second.body.fromCache).toBe(true);
    expect(second.body.data).toEqual(first.body.data);

    await call("PUT", "/users/", { key: partnerKey, body: { userId: user.userId, city: "Zwolle" } });
    const third = await call("GET", `/users/${user.userId}?useCache=1`, { key: partnerKey });
    expect(third.body.fromCache).toBe(false);
    expect(third.body.data[0]?.city).toBe("Zwolle");
  });
});

describe("DELETE /users/", () => {
  it("anonymises a user with wallet transactions but no ads, keeping the ledger", async () => {
    const user = await createUser(partnerKey, { lastName: "Grootboek-Uniek", email: "grootboek@example.nl" });
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: 500, description: "storting" },
    });
    expectEnvelope(await call("DELETE", `/users/${user.userId}`, { key: partnerKey }), 200);
    const row = await env.DB.prepare("SELECT last_name, email, deleted_at FROM users WHERE id = ?")
      .bind(user.userId)
      .first<{ last_name: string; email: string; deleted_at: string }>();
    expect(row).toMatchObject({ last_name: "anonymised", email: `anonymised-${user.userId}@invalid` });
    expect(row?.deleted_at).toBeTruthy();
    const ledger = await env.DB.prepare("SELECT count(*) AS n FROM wallet_entries WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(ledger?.n).toBe(1);
  });

  it("anonymising a payer leaves its sellers paying for themselves, as a full delete does", async () => {
    const payer = await createUser(partnerKey);
    await call("POST", "/wallet/", { key: internalKey, body: { userId: payer.userId, amount: 500, description: "x" } });
    const seller = await createUser(partnerKey);
    const settings = { userId: seller.userId, walletUserId: payer.userId, mainUserId: payer.userId };
    expectEnvelope(await call("POST", "/user/settings/", { key: internalKey, body: settings }), 200);
    expectEnvelope(await call("DELETE", `/users/${payer.userId}`, { key: partnerKey }), 200);
    const after = await call("GET", `/user/settings/${seller.userId}`, { key: internalKey });
    expect(after.body.data).toMatchObject({ walletUserId: null, mainUserId: null });
    const wallet = await call("GET", `/wallet/${seller.userId}`, { key: partnerKey });
    expectEnvelope(wallet, 200);
    expect(wallet.body.data.userId).toBe(seller.userId);
  });

  it("removes a user without ads completely, with everything below it", async () => {
    const user = await createUser(partnerKey);
    await call("POST", "/folders/", { key: partnerKey, body: { userId: user.userId, description: "Stock" } });
    const answer = await call("DELETE", `/users/${user.userId}`, { key: partnerKey });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toBe(false);
    expectEnvelope(await call("GET", `/users/${user.userId}/`, { key: partnerKey }), 404);
    const rows = await env.DB.prepare(
      "SELECT (SELECT count(*) FROM users WHERE id = ?1) + (SELECT count(*) FROM folders WHERE user_id = ?1) + (SELECT count(*) FROM user_settings WHERE user_id = ?1) AS n",
    )
      .bind(user.userId)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
  });

  it("anonymises a user with ads: no personal value is left in any table", async () => {
    const user = await createUser(partnerKey, {
      companyName: "Uniek Bedrijf Zeldzaam",
      firstName: "Hendrika",
      lastName: "Zonneveld-Uniek",
      email: "hendrika.uniek@example.nl",
      phone: "06-98765432",
      fax: "030-5556667",
      website: "https://uniek.example.nl",
      dateOfBirth: "1971-03-04",
      address: "Kerkpad Uniek",
    });
    const contacts = await call("POST", "/contacts/", {
      key: partnerKey,
      body: {
        userId: user.userId,
        name: "Filiaal Uniek",
        address: "Markt Uniek",
        houseNumber: "99",
        postalCode: "3511 AB",
        city: "Uniekstad",
        county: "UT",
        phone: "030-1112223",
        chathandle: "@uniek",
      },
    });
    const contactId = contacts.body.data[0]?.contactId;
    await env.DB.prepare(
      "INSERT INTO ads (user_id, contact_id, status, title, provider) VALUES (?, ?, 'active', 'Fiets', ?)",
    )
      .bind(user.userId, contactId, JSON.stringify({ name: "Provider Uniek", phone: "0612121212" }))
      .run();

    const connection = await connectPortal(partnerKey, user.userId, "portal_a");
    await call("POST", "/tasks/", {
      key: partnerKey,
      body: { userId: user.userId, portal: "portal_a", time: "09:00", enabled: true },
    });

    const answer = await call("DELETE", "/users/", { key: partnerKey, body: { userId: user.userId, ip: "192.0.2.1" } });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toBe(false);
    expectEnvelope(await call("GET", `/users/${user.userId}/`, { key: partnerKey }), 404);

    const dump = JSON.stringify(
      await Promise.all(
        [
          "users",
          "contacts",
          "ads",
          "folders",
          "user_settings",
          "user_ad_settings",
          "portal_connections",
          "tasks",
          "notifications",
        ].map(async (table) => (await env.DB.prepare(`SELECT * FROM ${table}`).all()).results),
      ),
    );
    for (const personal of [
      "Uniek Bedrijf Zeldzaam",
      "Hendrika",
      "Zonneveld-Uniek",
      "hendrika.uniek@example.nl",
      "06-98765432",
      "030-5556667",
      "uniek.example.nl",
      "1971-03-04",
      "Kerkpad Uniek",
      "Filiaal Uniek",
      "Markt Uniek",
      "Uniekstad",
      "030-1112223",
      "@uniek",
      "Provider Uniek",
      "0612121212",
      connection.email,
    ]) {
      expect(dump).not.toContain(personal);
    }
    const connections = await env.DB.prepare("SELECT count(*) AS n FROM portal_connections WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(connections?.n).toBe(0);
    // The ad stays, for its history.
    const ad = await env.DB.prepare("SELECT user_id FROM ads WHERE user_id = ?").bind(user.userId).first();
    expect(ad).not.toBeNull();
  });
});
