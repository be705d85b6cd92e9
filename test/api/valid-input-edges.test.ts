import { beforeAll, describe, expect, it } from "vitest";
import { call, expectError, newClient } from "../harness/api";
import { createAd, createUser, SOFA_CATEGORY } from "../harness/data";

/** Every length and count the schemas allow is answered, never with a 500 (issue: the last 500s). */

let key: string;
let userId: number;

beforeAll(async () => {
  key = (await newClient({ internal: true })).key;
  userId = (await createUser(key)).userId;
});

describe("valid input at the schemas' limits", () => {
  it("searches text of every allowed length, wildcards and emoji included, as plain text", async () => {
    const title = `${"%".repeat(25)}${"🛋".repeat(13)}_Bank`.slice(0, 60);
    const long = "Leren bank drie zits met hocker in cognac leer, nieuwstaat!".slice(0, 60);
    const [percent, plain] = await Promise.all([
      createAd(key, userId, { title }),
      createAd(key, userId, { title: long }),
    ]);
    for (const [query, adId] of [
      [title, percent.adId],
      [long.toUpperCase(), plain.adId],
    ] as const) {
      const answer = await call("GET", `/ads/?userId=${userId}&title=${encodeURIComponent(query)}`, { key });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.data.map((ad: { adId: number }) => ad.adId)).toEqual([adId]);
    }
    // A % is a character, not a wildcard.
    const wildcard = await call("GET", `/ads/?userId=${userId}&title=${encodeURIComponent("%")}`, { key });
    expect(wildcard.body.data.map((ad: { adId: number }) => ad.adId)).toEqual([percent.adId]);
    const description = await call("GET", `/ads/?description=${encodeURIComponent("x".repeat(200))}`, { key });
    const group = await call("GET", `/ads/?groupDescription=${encodeURIComponent("🛋".repeat(50))}`, { key });
    expect([description.status, group.status]).toEqual([200, 200]);
  });

  it("takes the 50 values value_equals_list allows, and the event types however often they repeat", async () => {
    const values = Array.from(
      { length: 50 },
      (_, i) => `searchattributes[0][value_equals_list][]=${i === 0 ? "gebruikt" : `v${i}`}`,
    );
    const search = await call(
      "GET",
      `/ads/?categoryId=${SOFA_CATEGORY}&searchattributes[0][portal]=portal_b&searchattributes[0][key]=condition&${values.join("&")}`,
      { key },
    );
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    const events = await call("GET", `/events/?type=${Array(99).fill("publish.active").join(",")}`, { key });
    expect(events.status, JSON.stringify(events.body)).toBe(200);
  });

  it("refuses a user for a client that does not exist with 400, on create and update", async () => {
    const created = await call("POST", "/users/", {
      key,
      body: { externalUserId: 880_001, lastName: "Jansen", email: "j@x.nl", phone: "0301234567", clientId: 99_999_999 },
    });
    expectError(created, "reference_not_found");
    expect(created.body.errors).toEqual(["clientId: client 99999999 not found"]);
    const updated = await call("PUT", "/users/", { key, body: { userId, clientId: 99_999_999 } });
    expectError(updated, "reference_not_found");
  });
});
