import { beforeAll, describe, expect, it } from "vitest";
import { marketplace } from "../fixtures/marketplace";
import { type Answer, call, defined, expectEnvelope, expectError, twoClients } from "../harness/api";
import { contactBody, createAd, createUser, manufacturerBody, PAID_CATEGORY, userBody } from "../harness/data";
import { connectedSellerAccount } from "../harness/marketplace";

/**
 * Optimistic concurrency: every resource a client writes answers an ETag when read, and a write sent with
 * that tag as `If-Match` is refused 412 (writing nothing) once the resource changed. Then, for every
 * resource both the platform's internal client and a partner write, the two race RACES times: unconditional
 * writes of different fields keep both changes, and conditional writes from one read let exactly one
 * through, whose change is the one stored.
 */

const RACES = 20;

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

type Writer = "internal" | "partner";
type Write = { method: "PUT" | "PATCH" | "POST"; path: string; body: Record<string, unknown> };

/** A resource under test: how to read it, how each writer changes it in a race, and whether a change shows. */
interface Resource {
  name: string;
  /** Makes a fresh one (under a new user of the partner); answers what the other members need. */
  make(): Promise<Record<string, number>>;
  read: (ids: Record<string, number>) => string;
  /** What the resource is in the read's answer. */
  pick(data: unknown): Record<string, unknown>;
  write(ids: Record<string, number>, writer: Writer, race: number): Write;
  /** The writer's change of this race shows in the resource. */
  shows(resource: Record<string, unknown>, writer: Writer, race: number): boolean;
  /** Both writers change one field: unconditional writes cannot keep both, only conditional ones are raced. */
  oneField?: true;
}

const first = (data: unknown) => defined((data as Record<string, unknown>[])[0], "the resource");
const portalSetting = (data: unknown, portal: string) =>
  defined(
    (data as { settings: Record<string, unknown>[] }).settings.find((s) => s.portal === portal),
    `the ${portal} setting`,
  );
const parity = (race: number) => race % 2 === 0;
/** Two of the limits the contract allows: consecutive races set different ones. */
const BUDGETS = [500, 1000];

const RESOURCES: Resource[] = [
  {
    name: "user",
    make: async () => ({ userId: (await createUser(key)).userId }),
    read: ({ userId }) => `/users/${userId}`,
    pick: first,
    write: ({ userId }, writer, race) => ({
      method: "PUT",
      path: "/users/",
      body:
        writer === "internal" ? { userId, subscriptions: { stock: parity(race) } } : { userId, city: `Zwolle ${race}` },
    }),
    shows: (user, writer, race) =>
      writer === "internal"
        ? (user.subscriptions as { stock: boolean }).stock === parity(race)
        : user.city === `Zwolle ${race}`,
  },
  {
    name: "user settings",
    make: async () => ({ userId: (await createUser(key)).userId }),
    read: ({ userId }) => `/user/settings/${userId}`,
    pick: (data) => data as Record<string, unknown>,
    write: ({ userId }, writer, race) => ({
      method: "PATCH",
      path: "/user/settings/",
      body:
        writer === "internal"
          ? { userId, budgetNotifyLimit: BUDGETS[race % 2] }
          : { userId, showcontact: parity(race) },
    }),
    shows: (settings, writer, race) =>
      writer === "internal" ? settings.budgetNotifyLimit === BUDGETS[race % 2] : settings.showcontact === parity(race),
  },
  {
    name: "user ad settings",
    make: async () => ({ userId: (await createUser(key)).userId }),
    read: ({ userId }) => `/user/adsettings/${userId}`,
    pick: (data) => data as Record<string, unknown>,
    write: ({ userId }, writer, race) => ({
      method: "POST",
      path: "/user/adsettings/",
      body: {
        userId,
        settings: [
          { portal: writer === "internal" ? "portal_a" : "portal_b", header: `${writer} ${race}`, footer: "" },
        ],
      },
    }),
    shows: (settings, writer, race) =>
      portalSetting(settings, writer === "internal" ? "portal_a" : "portal_b").header === `${writer} ${race}`,
  },
  {
    name: "contact",
    make: async () => {
      const { userId } = await createUser(key);
      const created = await call("POST", "/contacts/", { key, body: contactBody(userId) });
      expectEnvelope(created, 200);
      return { userId, contactId: defined(created.body.data[0]).contactId };
    },
    read: ({ userId, contactId }) => `/contacts/${userId}/${contactId}`,
    pick: first,
    write: ({ userId, contactId }, writer, race) => ({
      method: "PUT",
      path: "/contacts/",
      body: { userId, contactId, ...(writer === "internal" ? { name: `Hal ${race}` } : { city: `Assen ${race}` }) },
    }),
    shows: (contact, writer, race) =>
      writer === "internal" ? contact.name === `Hal ${race}` : contact.city === `Assen ${race}`,
  },
  {
    name: "folder",
    make: async () => {
      const { userId } = await createUser(key);
      const created = await call("POST", "/folders/", { key, body: { userId, description: "Map" } });
      expectEnvelope(created, 200);
      return { userId, folderId: defined(created.body.data[0]).folderId };
    },
    read: ({ userId, folderId }) => `/folders/${userId}/${folderId}`,
    pick: first,
    write: ({ userId, folderId }, writer, race) => ({
      method: "PUT",
      path: "/folders/",
      body: { userId, folderId, description: `${writer} ${race}` },
    }),
    shows: (folder, writer, race) => folder.description === `${writer} ${race}`,
    oneField: true,
  },
  {
    name: "task",
    make: async () => {
      const { userId } = await createUser(key);
      const created = await call("POST", "/tasks/", {
        key,
        body: { userId, portal: "portal_a", time: "09:30", enabled: true },
      });
      expectEnvelope(created, 200);
      return { userId, taskId: defined(created.body.data[0]).taskId };
    },
    read: ({ userId, taskId }) => `/tasks/${userId}/portal_a/${taskId}`,
    pick: first,
    write: ({ userId, taskId }, writer, race) => ({
      method: "PUT",
      path: "/tasks/",
      body: {
        userId,
        taskId,
        ...(writer === "internal" ? { time: `${String(race % 24).padStart(2, "0")}:15` } : { enabled: parity(race) }),
      },
    }),
    shows: (task, writer, race) =>
      writer === "internal" ? task.time === `${String(race % 24).padStart(2, "0")}:15` : task.enabled === parity(race),
  },
  {
    name: "ad",
    make: async () => {
      const { userId } = await createUser(key);
      return { userId, adId: (await createAd(key, userId)).adId };
    },
    read: ({ userId, adId }) => `/ads/?userId=${userId}&adId=${adId}`,
    pick: first,
    write: ({ adId }, writer, race) => ({
      method: "PUT",
      path: "/ads/",
      body: {
        adId,
        ...(writer === "internal" ? { title: `Leren bank ${race}` } : { url: `https://example.nl/${race}` }),
      },
    }),
    shows: (ad, writer, race) =>
      writer === "internal" ? ad.title === `Leren bank ${race}` : ad.url === `https://example.nl/${race}`,
  },
  {
    name: "ad settings",
    make: async () => {
      const { userId } = await createUser(key);
      return { userId, adId: (await createAd(key, userId)).adId };
    },
    read: ({ adId }) => `/adsettings/${adId}`,
    pick: (data) => data as Record<string, unknown>,
    write: ({ adId }, writer, race) => ({
      method: "POST",
      path: "/adsettings/",
      body: {
        adId,
        settings: [{ portal: writer === "internal" ? "portal_a" : "portal_b", showcontact: parity(race) }],
      },
    }),
    shows: (settings, writer, race) =>
      portalSetting(settings, writer === "internal" ? "portal_a" : "portal_b").showcontact === parity(race),
  },
  {
    name: "manufacturer",
    make: async () => {
      const { userId } = await createUser(key);
      const created = await call("POST", "/manufacturers/", {
        key,
        body: manufacturerBody(userId),
      });
      expectEnvelope(created, 200);
      return { userId, manufacturerId: defined(created.body.data.manufacturerId) };
    },
    read: ({ userId, manufacturerId }) => `/manufacturers/?userId=${userId}&manufacturerId=${manufacturerId}`,
    pick: first,
    write: ({ manufacturerId }, writer, race) => ({
      method: "PUT",
      path: "/manufacturers/",
      body: {
        manufacturerId,
        ...(writer === "internal"
          ? { manufacturerTradename: `Lampen ${race}` }
          : { manufacturerAddress: `Lichtweg ${race}, Eindhoven` }),
      },
    }),
    shows: (record, writer, race) =>
      writer === "internal"
        ? record.manufacturerTradename === `Lampen ${race}`
        : record.manufacturerAddress === `Lichtweg ${race}, Eindhoven`,
  },
];

const keyOf = (writer: Writer) => (writer === "internal" ? internalKey : key);

const send = (resource: Resource, ids: Record<string, number>, writer: Writer, race: number, ifMatch?: string) => {
  const { method, path, body } = resource.write(ids, writer, race);
  return call(method, path, { key: keyOf(writer), body, ...(ifMatch ? { headers: { "If-Match": ifMatch } } : {}) });
};

async function readTagged(resource: Resource, ids: Record<string, number>) {
  const answer = await call("GET", resource.read(ids), { key: internalKey });
  expectEnvelope(answer, 200);
  return { tag: defined(answer.headers.get("ETag"), "the ETag"), resource: resource.pick(answer.body.data) };
}

const statusesOf = (answers: Answer[]) => answers.map((answer) => answer.status).sort();

describe.each(RESOURCES)("the $name", (resource) => {
  it("answers an ETag; a write with a stale If-Match is refused 412 and writes nothing", async () => {
    const ids = await resource.make();
    const read = await readTagged(resource, ids);
    expect(read.tag).toMatch(/^"user:\d+\.\d+"$/);
    expectEnvelope(await send(resource, ids, "partner", 1, read.tag), 200);
    const after = await readTagged(resource, ids);
    expect(after.tag).not.toBe(read.tag);
    expect(resource.shows(after.resource, "partner", 1)).toBe(true);

    const refused = await send(resource, ids, "partner", 2, read.tag);
    expectError(refused, "precondition_failed");
    expect(refused.status).toBe(412);
    expect(refused.headers.get("ETag")).toBeNull();
    const unchanged = await readTagged(resource, ids);
    expect(unchanged.tag).toBe(after.tag);
    expect(resource.shows(unchanged.resource, "partner", 2)).toBe(false);

    // Another user's tag is no tag of this resource; `*` asks only that it exists.
    const other = await call("GET", `/users/${(await createUser(key)).userId}`, { key });
    expectError(await send(resource, ids, "partner", 3, defined(other.headers.get("ETag"))), "precondition_failed");
    expectEnvelope(await send(resource, ids, "partner", 4, "*"), 200);

    // A header that is no list of entity tags names no revision that was ever true: 400, not 412; nor
    // may it list more tags than a resource could have had (the check binds each one).
    for (const malformed of ["garbage", "W/", '"a"b"', `${after.tag}, junk`, `*, ${after.tag}`]) {
      const answer = await send(resource, ids, "partner", 5, malformed);
      expect(expectError(answer, "validation_failed")[0]?.message, malformed).toMatch(
        /^If-Match: .* is not an entity tag/,
      );
    }
    // RFC 9110's tags all are tags: empty ones, and a comma inside the quotes, name no revision of ours (412).
    for (const foreign of ['""', 'W/""', '"a,b"', `"a,b", W/""`]) {
      expect(expectError(await send(resource, ids, "partner", 5, foreign), "precondition_failed").length, foreign).toBe(
        1,
      );
    }
    const current = (await readTagged(resource, ids)).tag;
    const many = await send(resource, ids, "partner", 5, Array.from({ length: 98 }, () => current).join(", "));
    expect(expectError(many, "validation_failed")[0]?.message).toBe("If-Match: at most 20 entity tags (it lists 98)");
    expect((await readTagged(resource, ids)).tag, "nothing written").toBe(current);
  });

  it(`raced ${RACES} times by the internal client and a partner, undoes no change`, async () => {
    const ids = await resource.make();
    const undone: string[] = [];
    for (let race = 0; race < RACES; race += 1) {
      if (!resource.oneField) {
        const both = await Promise.all([
          send(resource, ids, "internal", 2 * race),
          send(resource, ids, "partner", 2 * race),
        ]);
        expect(statusesOf(both), JSON.stringify(both.map((answer) => answer.body))).toEqual([200, 200]);
        const { resource: after } = await readTagged(resource, ids);
        for (const writer of ["internal", "partner"] as const)
          if (!resource.shows(after, writer, 2 * race)) undone.push(`race ${race}: the ${writer} write`);
      }
      // Conditional, from one read: one write goes through, the other is refused and changes nothing.
      const { tag } = await readTagged(resource, ids);
      // Values of their own (a field of two values takes the other one than the write before).
      const conditional = 2 * race + 1;
      const [internal, partner] = await Promise.all([
        send(resource, ids, "internal", conditional, tag),
        send(resource, ids, "partner", conditional, tag),
      ]);
      expect(statusesOf([internal, partner])).toEqual([200, 412]);
      const { resource: after } = await readTagged(resource, ids);
      const [winner, loser] =
        internal.status === 200 ? (["internal", "partner"] as const) : (["partner", "internal"] as const);
      if (!resource.shows(after, winner, conditional)) undone.push(`race ${race}: the conditional ${winner} write`);
      if (resource.shows(after, loser, conditional))
        undone.push(`race ${race}: the refused ${loser} write was written`);
    }
    expect(undone).toEqual([]);
  }, 300_000);
});

describe("a client's own resources", () => {
  it("PATCH /client/ and a webhook's PUT take If-Match from their reads", async () => {
    const { key: own } = await twoClients();
    const client = await call("GET", "/client/", { key: own });
    const clientTag = defined(client.headers.get("ETag"));
    expect(clientTag).toMatch(/^"client:\d+\.\d+"$/);
    const origins = { returnOrigins: ["https://dealer.example.nl"] };
    expectEnvelope(
      await call("PATCH", "/client/", { key: own, body: origins, headers: { "If-Match": clientTag } }),
      200,
    );
    expectError(
      await call("PATCH", "/client/", { key: own, body: { returnOrigins: [] }, headers: { "If-Match": clientTag } }),
      "precondition_failed",
    );
    expect((await call("GET", "/client/", { key: own })).body.data.returnOrigins).toEqual(origins.returnOrigins);

    const created = await call("POST", "/webhooks/", {
      key: own,
      body: { url: "https://hooks.example.com/conditional" },
    });
    expectEnvelope(created, 200);
    const path = `/webhooks/${created.body.data.webhookId}`;
    const tag = defined((await call("GET", path, { key: own })).headers.get("ETag"));
    expectEnvelope(
      await call("PUT", path, { key: own, body: { description: "eerst" }, headers: { "If-Match": tag } }),
      200,
    );
    expectError(
      await call("PUT", path, { key: own, body: { description: "later" }, headers: { "If-Match": tag } }),
      "precondition_failed",
    );
    expect((await call("GET", path, { key: own })).body.data.description).toBe("eerst");
  });

  it("a disconnect with a stale If-Match revokes nothing at the marketplace: the connection stays", async () => {
    const { userId } = await connectedSellerAccount(key, internalKey, 1_000);
    const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer die blijft" });
    const path = `/oauth/${userId}/portal_a/`;
    const tag = defined((await call("GET", path, { key })).headers.get("ETag"));
    expectEnvelope(await call("PUT", "/users/", { key, body: { userId, city: "Zwolle" } }), 200);
    expectError(await call("DELETE", path, { key, headers: { "If-Match": tag } }), "precondition_failed");
    // Its refresh token was not revoked: once the access token ends, a dry run renews it and still asks.
    await marketplace("portal_a").expireTokens();
    const dryRun = await call("POST", "/publish/preflight/", { key, body: { userId, adId, portal: "portal_a" } });
    expect(dryRun.body.data.verdicts[0]).toMatchObject({ verifiedByMarketplace: true });
    expect((await call("GET", path, { key })).body.data.status).toBe(true);
    // With the tag read now, it goes.
    const fresh = defined((await call("GET", path, { key })).headers.get("ETag"));
    expectEnvelope(await call("DELETE", path, { key, headers: { "If-Match": fresh } }), 200);
    expect((await call("GET", path, { key })).body.data.status).toBe(false);
  });

  it("a write that takes no precondition refuses If-Match instead of ignoring it", async () => {
    const answer = await call("POST", "/users/", { key, body: userBody(), headers: { "If-Match": '"user:1.1"' } });
    expectError(answer, "validation_failed");
    expect(answer.body.errors).toEqual(["If-Match: this call takes no precondition (see docs/calling.md)"]);
  });
});
