import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, newClient } from "../harness/api";
import { contactBody, createUser } from "../harness/data";

let ownerKey: string;
let otherKey: string;
/** An internal client on shard 1: its calls are routed by the ids they name. */
let internalKey: string;
/** Another client on the other shard (src/db/shards.ts): its requests read shard 2, the owner's rows are on 1. */
let otherShardKey: string;
let userId: number;
let contactId: number;
let folderId: number;

beforeAll(async () => {
  ownerKey = (await newClient({ partner: true })).key;
  otherKey = (await newClient({ partner: true })).key;
  otherShardKey = (await newClient({ partner: true, shard: 2 })).key;
  internalKey = (await newClient({ internal: true })).key;
  const user = await createUser(ownerKey);
  userId = user.userId;
  contactId = defined(
    (await call("POST", "/contacts/", { key: ownerKey, body: contactBody(userId) })).body.data[0]?.contactId,
  );
  folderId = defined(
    (await call("POST", "/folders/", { key: ownerKey, body: { userId, description: "Map" } })).body.data[0]?.folderId,
  );
});

/** Every accounts endpoint, aimed at the owner's user. */
const endpoints = (): [string, string, unknown?][] => [
  ["GET", `/users/${userId}`],
  ["PUT", "/users/", { userId, city: "Elders" }],
  ["DELETE", `/users/${userId}`],
  ["DELETE", "/users/", { userId }],
  ["GET", `/contacts/${userId}`],
  ["GET", `/contacts/${userId}/${contactId}`],
  ["POST", "/contacts/", contactBody(userId)],
  ["PUT", "/contacts/", { userId, contactId, name: "Overname" }],
  ["DELETE", "/contacts/", { userId, contactId }],
  ["GET", `/folders/${userId}`],
  ["GET", `/folders/${userId}/${folderId}`],
  ["POST", "/folders/", { userId, description: "Overname" }],
  ["PUT", "/folders/", { userId, folderId, description: "Overname" }],
  ["DELETE", "/folders/", { userId, folderId }],
  ["GET", `/user/settings/${userId}`],
  ["GET", `/usersettings/?userId=${userId}`],
  ["POST", "/user/settings/", { userId, type: "demand" }],
  ["PATCH", "/user/settings/", { userId, showcontact: false }],
  ["GET", `/user/adsettings/${userId}`],
  ["GET", `/user/adsettings/${userId}/portal_a`],
  ["POST", "/user/adsettings/", { userId, settings: [{ portal: "website", header: "x", footer: "y" }] }],
  ["POST", "/user/activate/", { userId, activationtoken: "whatever" }],
  ["POST", "/user/activate/generate/", { userId }],
  ["POST", "/auth/link/generate/", { userId }],
  ["POST", "/auth/link/validate/", { userId, accesstoken: "whatever" }],
];

describe("tenant isolation", () => {
  it("answers 404 to another client on every endpoint, and changes nothing", async () => {
    const before = (await call("GET", `/users/${userId}`, { key: ownerKey })).body.data;
    for (const [method, path, body] of endpoints())
      for (const key of [otherKey, otherShardKey]) {
        const answer = await call(method, path, { key, body });
        expect(answer.status, `${method} ${path}`).toBe(404);
        const message = `userId: user ${userId} not found`;
        expect(answer.body).toEqual({
          result: false,
          errors: [message],
          data: [],
          errorDetails: [{ code: "user_not_found", field: "userId", message }],
        });
      }
    const after = await call("GET", `/users/${userId}`, { key: ownerKey });
    expect(after.body.data).toEqual(before);
    for (const key of [otherKey, otherShardKey])
      expect((await call("GET", "/users/", { key })).body.totalItems).toBe(0);
  });

  it("does not share cached answers between clients", async () => {
    const owner = await call("GET", `/users/${userId}?useCache=1`, { key: ownerKey });
    expect(owner.status).toBe(200);
    const other = await call("GET", `/users/${userId}?useCache=1`, { key: otherKey });
    expect(other.status).toBe(404);
  });
});

describe("random bodies", () => {
  const writes = (): [string, string][] => [
    ["POST", "/users/"],
    ["PUT", "/users/"],
    ["DELETE", "/users/"],
    ["POST", "/contacts/"],
    ["PUT", "/contacts/"],
    ["DELETE", "/contacts/"],
    ["POST", "/folders/"],
    ["PUT", "/folders/"],
    ["DELETE", "/folders/"],
    ["POST", "/user/settings/"],
    ["PATCH", "/usersettings/"],
    ["POST", "/user/adsettings/"],
    ["POST", "/user/activate/"],
    ["POST", "/user/activate/generate/"],
    ["POST", "/auth/link/generate/"],
    ["POST", "/auth/link/validate/"],
  ];

  // Plausible field names make the generator reach past "unknown object" into the field rules.
  const fieldNames = fc.constantFrom(
    "userId",
    "contactId",
    "folderId",
    "email",
    "county",
    "settings",
    "attributes",
    "postalCode",
    "activationtoken",
    "accesstoken",
    "externalUserId",
    "companyName",
    "lastName",
    "phone",
    "portal",
    "header",
  );
  const body = fc.oneof(
    fc.jsonValue(),
    fc.dictionary(fieldNames, fc.oneof(fc.jsonValue(), fc.constant(userId), fc.integer())),
  );

  // An internal client's request is routed by the ids it names (src/middleware/shardRouting.ts), so its
  // bodies and query strings are read before validation: any of them still gets the envelope.
  it.each([
    ["a partner client", () => ownerKey],
    ["an internal client", () => internalKey],
  ])("never answer a 5xx or anything but the envelope, from %s", async (_, keyOf) => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...writes()), body, async ([method, path], payload) => {
        const answer = await call(method, path, { key: keyOf(), body: payload });
        expect(answer.status).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
        expect(Array.isArray(answer.body.errors)).toBe(true);
        expect(answer.body).toHaveProperty("data");
      }),
      { numRuns: 300 },
    );
  });

  it("never answer a 5xx to an internal client's query string, whatever its names and values", async () => {
    const name = fc.oneof(
      fieldNames,
      fc.constantFrom("__proto__", "constructor", "toString", "adId[]", "order[0][field]"),
    );
    const value = fc.oneof(fc.integer().map(String), fc.string(), fc.constant("1,2,3"));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(name, value), { maxLength: 4 }), async (pairs) => {
        const query = pairs.map(([n, v]) => `${n}=${encodeURIComponent(v)}`).join("&");
        const answer = await call("GET", `/jobs/?${query}`, { key: internalKey });
        expect(answer.status, query).toBeLessThan(500);
        expect(typeof answer.body.result).toBe("boolean");
      }),
      { numRuns: 150 },
    );
  });
});
