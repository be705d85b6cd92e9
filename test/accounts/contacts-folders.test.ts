import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, expectEnvelope, expectError, twoClients } from "../harness/api";
import { contactBody, createUser } from "../harness/data";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

describe("contacts", () => {
  it("creates, lists, updates and removes contacts, answering the user's contacts each time", async () => {
    const user = await createUser(key);
    const created = await call("POST", "/contacts/", { key, body: contactBody(user.userId) });
    expectEnvelope(created, 200);
    expect(created.body.data).toEqual([
      {
        userId: user.userId,
        contactId: expect.any(Number),
        active: false,
        name: "Showroom Noord",
        address: "Industrieweg",
        houseNumber: "7",
        postalCode: "9711 AA",
        city: "Groningen",
        county: "GR",
        country: "NL",
        phone: "050-7654321",
        website: null,
        chathandle: null,
      },
    ]);
    const contactId = created.body.data[0]?.contactId;
    await call("POST", "/contacts/", { key, body: contactBody(user.userId, { name: "Werkplaats" }) });

    const listed = await call("GET", `/contacts/${user.userId}/?itemsPerPage=1&page=2`, { key });
    expect(listed.body).toMatchObject({ totalItems: 2, totalInSet: 1, page: 2, itemsPerPage: 1 });
    expect(listed.body.data[0]?.name).toBe("Werkplaats");
    const one = await call("GET", `/contacts/${user.userId}/${contactId}`, { key });
    expect(one.body.data.map((c: { contactId: number }) => c.contactId)).toEqual([contactId]);
    expectEnvelope(await call("GET", `/contacts/${user.userId}/999999`, { key }), 404);
    for (const bad of ["itemsPerPage=0", "itemsPerPage=101", "page=0"]) {
      expectEnvelope(await call("GET", `/contacts/${user.userId}?${bad}`, { key }), 400);
      expectEnvelope(await call("GET", `/folders/${user.userId}?total=1&${bad}`, { key }), 400);
    }

    const updated = await call("PUT", "/contacts/", {
      key,
      body: { userId: user.userId, contactId, chathandle: "@noord" },
    });
    expect(updated.body.data.find((c: { contactId: number }) => c.contactId === contactId)?.chathandle).toBe("@noord");

    const removed = await call("DELETE", "/contacts/", { key, body: { userId: user.userId, contactId } });
    expectEnvelope(removed, 200);
    expect(removed.body.data.map((c: { name: string }) => c.name)).toEqual(["Werkplaats"]);

    const summary = await call("GET", `/users/${user.userId}`, { key });
    expect(summary.body.data[0]?.contacts).toMatchObject({ numberOfContacts: 1, numberOfActiveContacts: 0 });
  });

  it.each([
    [{ name: "A" }, "name: must be 2-255 characters"],
    [{ address: undefined }, "address: is required"],
    [{ houseNumber: "x".repeat(21) }, "houseNumber: must be at most 20 characters"],
    [{ postalCode: "ABCD 12" }, "postalCode: must be a valid Dutch postal code (1234 AB)"],
    [{ postalCode: undefined }, "postalCode: is required for an address in the Netherlands"],
    [{ phone: "123" }, "phone: must be 5-50 characters"],
    [{ city: "G" }, "city: must be 2-255 characters"],
  ])("refuses %j", async (overrides, message) => {
    const user = await createUser(key);
    const answer = await call("POST", "/contacts/", { key, body: contactBody(user.userId, overrides) });
    expectEnvelope(answer, 400);
    expect(answer.body.errors).toContain(message);
  });

  it("accepts a contact abroad (empty county) without postal code", async () => {
    const user = await createUser(key);
    const answer = await call("POST", "/contacts/", {
      key,
      body: contactBody(user.userId, { county: "", postalCode: undefined }),
    });
    expect(answer.body.data[0]).toMatchObject({ county: "", country: "", postalCode: null });
  });

  it("enforces maxContacts of the user settings", async () => {
    const user = await createUser(key);
    await call("POST", "/user/settings/", { key: internalKey, body: { userId: user.userId, maxContacts: 1 } });
    expectEnvelope(await call("POST", "/contacts/", { key, body: contactBody(user.userId) }), 200);
    const refused = await call("POST", "/contacts/", { key, body: contactBody(user.userId) });
    expectError(refused, "max_contacts_reached");
    expect(refused.body.errors).toEqual(["contacts: the user may have at most 1 contacts (maxContacts)"]);
  });

  it("never passes maxContacts under concurrent creates", async () => {
    const user = await createUser(key);
    await call("POST", "/user/settings/", { key: internalKey, body: { userId: user.userId, maxContacts: 3 } });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call("POST", "/contacts/", { key, body: contactBody(user.userId, { name: `Contact ${i}` }) }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(5);
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM contacts WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(stored?.n).toBe(3);
  });

  it("marks a contact active when an active ad uses it, and refuses to remove it", async () => {
    const user = await createUser(key);
    const contactId = (await call("POST", "/contacts/", { key, body: contactBody(user.userId) })).body.data[0]
      ?.contactId;
    const ad = await env.DB.prepare(
      "INSERT INTO ads (user_id, contact_id, status, title) VALUES (?, ?, 'active', 'Auto') RETURNING id",
    )
      .bind(user.userId, contactId)
      .first<{ id: number }>();

    const listed = await call("GET", `/contacts/${user.userId}`, { key });
    expect(listed.body.data[0]?.active).toBe(true);
    const summary = await call("GET", `/users/${user.userId}`, { key });
    expect(summary.body.data[0]?.contacts).toMatchObject({ numberOfContacts: 1, numberOfActiveContacts: 1 });

    const refused = await call("DELETE", "/contacts/", { key, body: { userId: user.userId, contactId } });
    expectError(refused, "contact_in_use");
    expect(refused.body.errors[0]).toContain(`is used by active ads (adId ${ad?.id})`);

    await env.DB.prepare("UPDATE ads SET status = 'archive' WHERE id = ?").bind(ad?.id).run();
    expect((await call("GET", `/contacts/${user.userId}`, { key })).body.data[0]?.active).toBe(false);
    expectEnvelope(await call("DELETE", "/contacts/", { key, body: { userId: user.userId, contactId } }), 200);
  });
});

describe("folders", () => {
  it("creates, renames, lists and removes folders", async () => {
    const user = await createUser(key);
    const created = await call("POST", "/folders/", { key, body: { userId: user.userId, description: "Occasions" } });
    expectEnvelope(created, 200);
    expect(created.body.data).toEqual([
      { userId: user.userId, folderId: expect.any(Number), description: "Occasions" },
    ]);
    const folderId = created.body.data[0]?.folderId;
    await call("POST", "/folders/", { key, body: { userId: user.userId, description: "Onderdelen" } });

    const renamed = await call("PUT", "/folders/", {
      key,
      body: { userId: user.userId, folderId, description: "Auto's" },
    });
    expect(renamed.body.data.map((f: { description: string }) => f.description)).toEqual(["Auto's", "Onderdelen"]);

    const complete = await call("GET", `/folders/${user.userId}?itemsPerPage=1&total=true`, { key });
    expect(complete.body).toMatchObject({ totalItems: 2, totalInSet: 2 });

    await env.DB.prepare("INSERT INTO ads (user_id, folder_id, title) VALUES (?, ?, 'Golf'), (?, ?, 'Polo')")
      .bind(user.userId, folderId, user.userId, folderId)
      .run();
    const paged = await call("GET", `/folders/${user.userId}?itemsPerPage=1`, { key });
    expect(paged.body).toMatchObject({ totalItems: 2, totalInSet: 1, itemsPerPage: 1 });
    expect(paged.body.data).toEqual([{ userId: user.userId, folderId, description: "Auto's", total: 2 }]);
    expect((await call("GET", `/folders/${user.userId}/${folderId}`, { key })).body.data).toHaveLength(1);

    const removed = await call("DELETE", "/folders/", { key, body: { userId: user.userId, folderId } });
    expect(removed.body.data.map((f: { description: string }) => f.description)).toEqual(["Onderdelen"]);
    const orphaned = await env.DB.prepare("SELECT count(*) AS n FROM ads WHERE user_id = ? AND folder_id IS NULL")
      .bind(user.userId)
      .first<{ n: number }>();
    expect(orphaned?.n).toBe(2);
    expectEnvelope(await call("DELETE", "/folders/", { key, body: { userId: user.userId, folderId } }), 404);
  });

  it("refuses a description over 255 characters or empty", async () => {
    const user = await createUser(key);
    for (const description of ["x".repeat(256), ""]) {
      const answer = await call("POST", "/folders/", { key, body: { userId: user.userId, description } });
      expectEnvelope(answer, 400);
      expect(answer.body.errors[0]).toMatch(/^description: /);
    }
  });
});
