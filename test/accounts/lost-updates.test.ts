import { describe, expect, it } from "vitest";
import { call, defined, expectEnvelope, twoClients } from "../harness/api";
import { createUser } from "../harness/data";

/**
 * No write undoes another: a partner writes back the whole user (or its settings) it read while the
 * platform's internal client changes an internal-only field of it. Each race runs both writes at once,
 * RACES times; the internal change must survive every one of them.
 */

const RACES = 20;

describe("a partner's write beside an internal one", () => {
  it("PUT /users/ of the user as read leaves the internal client's subscriptions as it set them", async () => {
    const { key, internalKey } = await twoClients();
    const { userId } = await createUser(key);
    const undone: number[] = [];
    for (let race = 0; race < RACES; race += 1) {
      const stock = race % 2 === 0;
      const read = (await call("GET", `/users/${userId}`, { key })).body.data[0];
      const [internal, partner] = await Promise.all([
        call("PUT", "/users/", { key: internalKey, body: { userId, subscriptions: { stock, shop: !stock } } }),
        call("PUT", "/users/", { key, body: { ...read, city: `Utrecht ${race}` } }),
      ]);
      expectEnvelope(internal, 200);
      // The partner's copy may have read the other subscriptions: sent back unchanged it passes, or it was
      // read before the change and is refused as a change it may not make.
      expect([200, 403]).toContain(partner.status);
      const after = defined((await call("GET", `/users/${userId}`, { key: internalKey })).body.data[0], "the user");
      if (after.subscriptions.stock !== stock || after.subscriptions.shop !== !stock) undone.push(race);
    }
    expect(undone).toEqual([]);
  }, 120_000);

  it("POST /user/settings/ of the settings as read leaves the internal client's payer as it set it", async () => {
    const { key, internalKey } = await twoClients();
    const { userId } = await createUser(key);
    const payers = [(await createUser(key)).userId, (await createUser(key)).userId];
    const undone: number[] = [];
    for (let race = 0; race < RACES; race += 1) {
      const walletUserId = payers[race % 2];
      const read = (await call("GET", `/user/settings/${userId}`, { key })).body.data;
      const [internal, partner] = await Promise.all([
        call("POST", "/user/settings/", { key: internalKey, body: { userId, walletUserId } }),
        call("POST", "/user/settings/", { key, body: { ...read, itemsPerPage: 25 + (race % 3) } }),
      ]);
      expectEnvelope(internal, 200);
      expect([200, 403]).toContain(partner.status);
      const after = (await call("GET", `/user/settings/${userId}`, { key: internalKey })).body.data;
      if (after.walletUserId !== walletUserId) undone.push(race);
    }
    expect(undone).toEqual([]);
  }, 120_000);

  it("two partial PUTs at once, one emptying companyName and one lastName, never leave the user with neither", async () => {
    const { key } = await twoClients();
    const { userId } = await createUser(key);
    const broken: number[] = [];
    for (let race = 0; race < RACES; race += 1) {
      const [company, last] = await Promise.all([
        call("PUT", "/users/", { key, body: { userId, companyName: null } }),
        call("PUT", "/users/", { key, body: { userId, lastName: null } }),
      ]);
      // Each alone is valid; together they would break the rule: one of them is refused with its message.
      expect([company.status, last.status].sort()).toEqual([200, 400]);
      const refused = company.status === 400 ? company : last;
      expect(refused.body.errors).toEqual(["lastName: either companyName or lastName is required"]);
      const user = defined((await call("GET", `/users/${userId}`, { key })).body.data[0], "the user");
      if (!user.companyName && !user.lastName) broken.push(race);
      expectEnvelope(
        await call("PUT", "/users/", { key, body: { userId, companyName: "Garage De Vries", lastName: "de Vries" } }),
        200,
      );
    }
    expect(broken).toEqual([]);
  }, 120_000);
});
