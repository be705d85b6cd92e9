import fc from "fast-check";
import { expect } from "vitest";
import committed from "../../openapi/openapi.json";
import { COUNTIES } from "../../src/lib/dutch";
import { call, newClient } from "../harness/api";
import {
  CAR_ATTRIBUTES,
  CAR_CATEGORY,
  contactBody,
  createAd,
  createUser,
  GPSR_VALUES,
  SOFA_CATEGORY,
} from "../harness/data";

/**
 * What a client reads it can write back. For every resource that can be read and then replaced or
 * updated: create one, read it, send it back whole with one updatable field changed, read it again. The
 * write answers 2xx and exactly that field changed (and what the answer derives from it).
 *
 * The resources are split over a few test files: the test pool's SELF.fetch slows down with every
 * request a file makes (workers-sdk#15446), and each file starts afresh.
 *
 * The fields come from the OpenAPI document: every field of the write's body that is neither read-only,
 * fixed, nor the resource's identity must have a generator here, so a field added to a write later
 * fails this test until it round-trips too.
 */

const RUNS = Number(process.env.WRITE_BACK_RUNS ?? 25);

export type Resource = Record<string, unknown>;
/** What a run made besides the resource, for the fields that name other resources. */
interface Made {
  /** The user the resources belong to. */
  userId: number;
  /** Another user of the client; a folder, a contact and an ad of the user. */
  otherUserId: number;
  adId: number;
  folderId: number;
  contactId: number;
}
/**
 * Values for a field, or values given the resource as read (fc.pre skips a field that cannot change alone
 * there); the run takes the first that differs from the value read.
 */
type FieldChange = fc.Arbitrary<unknown> | ((current: Resource, made: Made) => fc.Arbitrary<unknown>);

interface Subject {
  /** The write: its method, path and the component of its body in the OpenAPI document. */
  write: { method: "PUT" | "POST"; path: (resource: Resource) => string; schema: string };
  /** Fields that name the resource, not change it. */
  identity: string[];
  /** Creates a resource (for the run's user) and answers the path that reads it. */
  create: (made: Made) => Promise<string>;
  /** A new valid value per updatable field. */
  fields: Record<string, FieldChange>;
  /** Removes what a run made when the client may hold only so many (webhook endpoints). */
  afterRun?: (where: string) => Promise<unknown>;
  /** Fields of the answer that follow from a changed field. */
  derived?: Record<string, string[]>;
}

let key: string;
let otherClientId: number;

/** The clients a test file of these checks acts as: call it in the file's beforeAll. */
export async function setUp(): Promise<string> {
  // In group 1, with no client: a user moves only within its group, and a user without a client is group 1's.
  key = (await newClient({ internal: true, groupId: 1 })).key;
  otherClientId = (await newClient({ groupId: 1 })).client.id;
  return key;
}

export const read = async (path: string): Promise<Resource> => {
  const answer = await call("GET", path, { key });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const data = answer.body.data;
  return (Array.isArray(data) ? data[0] : data) as Resource;
};
export const created = async (method: string, path: string, body: unknown) => {
  const answer = await call(method, path, { key, body });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
};

// ---- values as the API stores and answers them ----
const word = fc.stringMatching(/^[A-Z][a-z]{2,14}$/);
const words = fc.tuple(word, word).map(([a, b]) => `${a} ${b.toLowerCase()}`);
const phone = fc.stringMatching(/^0[1-9]\d-\d{7}$/);
const postalCode = fc
  .tuple(fc.integer({ min: 1000, max: 9999 }), fc.stringMatching(/^[A-Z]{2}$/))
  .filter(([, letters]) => !["SA", "SD", "SS"].includes(letters))
  .map(([digits, letters]) => `${digits} ${letters}`);
const houseNumber = fc.stringMatching(/^[1-9]\d{0,3}[a-z]?$/);
const email = fc.tuple(word, word).map(([a, b]) => `${a.toLowerCase()}@${b.toLowerCase()}.nl`);
/** Web URLs of every shape the API took before their pattern was in the document: IDN hosts, IPv4, user information. */
const website = fc.oneof(
  word.map((w) => `https://www.${w.toLowerCase()}.nl/`),
  word.map((w) => `https://café-${w.toLowerCase()}.nl/`),
  word.map((w) => `http://例え.jp/${w}`),
  fc.tuple(fc.nat(255), word).map(([octet, w]) => `http://10.0.${octet}.1/${w}`),
  word.map((w) => `https://${w.toLowerCase()}:geheim@www.${w.toLowerCase()}.nl/`),
);
const county = fc.constantFrom(...COUNTIES);
const nullable = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: null });
const date = fc
  .date({ min: new Date("1940-01-01"), max: new Date("2005-12-31"), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
const plainText = fc.array(words, { minLength: 1, maxLength: 4 }).map((parts) => parts.join(". "));
const cents = fc.integer({ min: 0, max: 10_000_000 });

export /** A feed's updatable fields (a header sent back without its value keeps the secret). */
const FEED_FIELDS: Record<string, FieldChange> = {
  url: fc.constantFrom("https://erp.example.com/export/stock.csv", "https://dealer.example.nl/voorraad.ndjson"),
  format: fc.constantFrom("ndjson", "json", "csv"),
  header: fc.constantFrom(null, { name: "X-Dealer-Key" }),
  schedule: fc.oneof(
    fc.record({ every: fc.constant("hourly"), minute: fc.integer({ min: 0, max: 59 }) }),
    fc.record({
      every: fc.constant("daily"),
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.integer({ min: 0, max: 59 }),
    }),
  ),
  removal: fc.constantFrom("delete", "archive"),
  maxEndedPercent: fc.integer({ min: 0, max: 100 }),
  paused: fc.boolean(),
};

const subjects: Record<string, Subject> = {
  users: {
    write: { method: "PUT", path: () => "/users/", schema: "UpdateUser" },
    identity: ["userId"],
    create: async ({ userId }) => `/users/${userId}`,
    fields: {
      clientId: () => fc.constantFrom(null, otherClientId),
      externalUserId: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
      companyName: nullable(words),
      gender: fc.constantFrom("M", "F", null),
      firstName: nullable(word),
      lastName: word,
      dateOfBirth: nullable(date),
      address: words,
      houseNumber: houseNumber,
      postalCode: postalCode,
      city: word,
      county: county,
      // Abroad the county is empty: a country other than NL is a change of its own only there.
      country: (current) => {
        fc.pre(current.county === "");
        return fc.constantFrom("BE", "DE", "");
      },
      email: email,
      website: nullable(website),
      phone: phone,
      fax: nullable(phone),
      cellular: nullable(phone),
      subscriptions: fc.record({ stock: fc.boolean(), shop: fc.boolean() }),
    },
  },
  contacts: {
    write: { method: "PUT", path: () => "/contacts/", schema: "UpdateContact" },
    identity: ["userId", "contactId"],
    create: async ({ userId, contactId }) => `/contacts/${userId}/${contactId}`,
    fields: {
      name: words,
      address: words,
      houseNumber: houseNumber,
      postalCode: postalCode,
      city: word,
      county: county,
      phone: phone,
      website: nullable(website),
      chathandle: nullable(word),
    },
  },
  folders: {
    write: { method: "PUT", path: () => "/folders/", schema: "UpdateFolder" },
    identity: ["userId", "folderId"],
    create: async ({ userId, folderId }) => `/folders/${userId}/${folderId}`,
    fields: { description: words },
  },
  ads: {
    write: { method: "PUT", path: () => "/ads/", schema: "UpdateAd" },
    identity: ["adId"],
    create: async ({ userId, contactId }) => `/ads/?adId=${(await adOf(userId, { contactId })).adId}`,
    fields: {
      contactId: (_, made) => fc.constantFrom(null, made.contactId),
      folderId: (_, made) => fc.constantFrom(null, made.folderId),
      status: fc.constantFrom("concept", "active", "archive"),
      type: fc.constantFrom("supply", "demand"),
      title: fc.tuple(words, word).map(([a, b]) => `${a} ${b}`.slice(0, 60)),
      imagetext: nullable(word),
      description: plainText,
      attributes: (current) =>
        fc.constantFrom("nieuw", "gebruikt", "zo goed als nieuw").map((condition) =>
          current.categoryId === CAR_CATEGORY
            ? CAR_ATTRIBUTES.map(({ values, ...set }) => ({ ...set, attributes: values }))
            : [
                {
                  portal: "portal_a",
                  locale: "nl_NL",
                  attributes: [{ key: "condition", value: condition }, ...GPSR_VALUES],
                },
                { portal: "portal_b", locale: "nl_NL", attributes: [{ key: "condition", value: condition }] },
              ],
        ),
      url: nullable(website),
      price: fc.record({
        model: fc.constant("fixed"),
        price: cents,
        minimumBid: fc.constant(null),
        shippingCosts: nullable(cents),
        retailPrice: nullable(cents),
      }),
      settings: fc
        .record({ showcontact: fc.boolean(), autoreplace: fc.boolean() })
        .map((s) => [{ portal: "portal_a", ...s, video: null }]),
      misc: (current) => {
        fc.pre(current.categoryId === CAR_CATEGORY);
        return fc.record({ licensePlate: nullable(fc.stringMatching(/^[A-Z]{2}-\d{3}-[A-Z]$/)) });
      },
      provider: fc.record({ name: words, city: word }),
    },
    derived: { contactId: ["contact"] },
  },
  adSettings: {
    write: { method: "POST", path: () => "/adsettings/", schema: "AdSettingsInput" },
    identity: ["adId"],
    create: async ({ userId }) => `/adsettings/${(await adOf(userId)).adId}`,
    fields: {
      settings: fc
        .record({
          showcontact: fc.boolean(),
          autoreplace: fc.boolean(),
          video: nullable(website.map((u) => `${u}film.mp4`)),
        })
        .map((s) => [{ portal: "portal_a", ...s }]),
    },
  },
  userSettings: {
    write: { method: "POST", path: () => "/user/settings/", schema: "UserSettingsInput" },
    identity: ["userId"],
    create: async ({ userId }) => `/user/settings/${userId}`,
    fields: {
      mainUserId: (_, made) => fc.constantFrom(null, made.otherUserId),
      walletUserId: (_, made) => fc.constantFrom(null, made.otherUserId),
      maxContacts: fc.integer({ min: 0, max: 1000 }),
      maxImages: fc.integer({ min: 1, max: 100 }),
      status: fc.constantFrom("active", "locked"),
      type: fc.constantFrom("supply", "demand"),
      allowbids: fc.boolean(),
      showcontact: fc.boolean(),
      itemsPerPage: fc.integer({ min: 1, max: 100 }),
      // A category outside the preferred group is refused; with no group, any category.
      groupId: (current) => {
        fc.pre(current.categoryId === null);
        return fc.constantFrom(null, 91, 93);
      },
      categoryId: (current) =>
        fc.constantFrom(
          null,
          ...(current.groupId === 91 ? [9101, 9105] : current.groupId === 93 ? [9301, 9302] : [9101, 9301]),
        ),
      attributes: fc.subarray([
        { key: "condition", value: "gebruikt" },
        { key: "delivery", value: "verzenden" },
      ]),
      budgetNotifyLimit: fc.constantFrom(0, 500, 1000, 2500, 5000, 10000, 15000, 20000),
    },
  },
  userAdSettings: {
    write: { method: "POST", path: () => "/user/adsettings/", schema: "UserAdSettingsInput" },
    identity: ["userId"],
    create: async ({ userId }) => {
      const settings = [{ portal: "portal_a", header: "Welkom", footer: "Tot ziens", allowContactByEmail: true }];
      await created("POST", "/user/adsettings/", { userId, settings });
      return `/user/adsettings/${userId}`;
    },
    fields: {
      settings: fc
        .record({ header: plainText, footer: plainText, allowContactByEmail: fc.boolean() })
        .map((s) => [{ portal: "portal_a", ...s }]),
    },
  },
  tasks: {
    write: { method: "PUT", path: () => "/tasks/", schema: "UpdateTask" },
    identity: ["taskId", "userId"],
    create: async ({ userId }) => {
      const body = { userId, portal: "portal_a", time: "09:30", enabled: true };
      const tasks = (await created("POST", "/tasks/", body)) as Resource[];
      return `/tasks/${userId}/portal_a/${tasks.at(-1)?.taskId}`;
    },
    fields: {
      time: fc
        .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .map(([h, m]) => `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`),
      dayOfWeek: fc.subarray(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]),
      adId: (_, made) => fc.constantFrom([], [made.adId]),
      feature: fc.constantFrom("upcall", "dagtopper", "homepaginaAdvertentie"),
      enabled: fc.boolean(),
    },
  },
  manufacturers: {
    write: { method: "PUT", path: () => "/manufacturers/", schema: "UpdateManufacturer" },
    identity: ["manufacturerId"],
    create: async ({ userId }) => {
      const manufacturer = await created("POST", "/manufacturers/", {
        userId,
        categoryId: SOFA_CATEGORY,
        brands: ["Leolux"],
        manufacturerTradename: "Leolux B.V.",
        manufacturerAddress: "Kazernestraat 1, Venlo",
        manufacturerEmail: "info@leolux.nl",
      });
      return `/manufacturers/?manufacturerId=${(manufacturer as Resource).manufacturerId}`;
    },
    fields: {
      userId: (_, made) => fc.constant(made.otherUserId),
      // The group follows the category when none is set: a category of the same group keeps it.
      groupId: fc.constant(93),
      categoryId: fc.constantFrom(null, 9301, 9302, 9303),
      brands: fc.array(word, { maxLength: 3 }),
      manufacturerTradename: words,
      manufacturerAddress: words,
      manufacturerEmail: email,
      description: fc.oneof(fc.constant(""), plainText),
    },
    derived: { categoryId: ["categoryDescription", "groupId"], groupId: ["categoryId", "categoryDescription"] },
  },
  webhooks: {
    write: { method: "PUT", path: (webhook) => `/webhooks/${webhook.webhookId}`, schema: "UpdateWebhook" },
    identity: [],
    create: async ({ userId }) => {
      const webhook = await created("POST", "/webhooks/", { url: `http://hooks.test/ok/write-back-${userId}` });
      return `/webhooks/${(webhook as Resource).webhookId}`;
    },
    fields: {
      url: (_, made) => fc.constant(`http://hooks.test/ok/write-back-${made.userId}-changed`),
      types: fc.subarray(["publish.active", "publish.error", "image.stored"]),
      enabled: fc.boolean(),
      description: fc.oneof(fc.constant(""), words),
    },
    derived: { enabled: ["disabledReason"] },
    afterRun: (where) => call("DELETE", where, { key }),
  },
  feeds: {
    write: { method: "PUT", path: (feed) => `/feeds/${feed.feedId}`, schema: "UpdateFeed" },
    identity: ["feedId", "userId"],
    create: async ({ userId }) => {
      const feed = await created("POST", "/feeds/", {
        userId,
        url: "https://erp.example.com/stock.ndjson",
        format: "ndjson",
        header: { name: "X-Api-Key", value: "dealer-secret" },
        schedule: { every: "hourly", minute: 5 },
      });
      return `/feeds/${(feed as Resource).feedId}`;
    },
    fields: FEED_FIELDS,
    // Every write moves the feed's `updatedAt`; a schedule, its next fetch too.
    derived: Object.fromEntries(
      Object.keys(FEED_FIELDS).map((field) => [
        field,
        field === "schedule" ? ["updatedAt", "nextRunAt"] : ["updatedAt"],
      ]),
    ),
  },
};

/** A user with a contact, a folder and an ad, and another user of the client. */
async function makeRun(): Promise<Made> {
  const [user, other] = await Promise.all([createUser(key), createUser(key)]);
  const userId = user.userId as number;
  const [contacts, folders, ad] = await Promise.all([
    created("POST", "/contacts/", contactBody(userId)),
    created("POST", "/folders/", { userId, description: "Voorraad" }),
    createAd(key, userId),
  ]);
  return {
    userId,
    adId: ad.adId as number,
    otherUserId: other.userId as number,
    contactId: (contacts as Resource[]).at(-1)?.contactId as number,
    folderId: (folders as Resource[]).at(-1)?.folderId as number,
  };
}

/** An ad with every optional part filled: a sofa, or a car (whose licence plate is a field too). */
const adOf = (userId: number, overrides: Record<string, unknown> = {}) =>
  createAd(key, userId, {
    ...(userId % 2 === 0 ? { categoryId: CAR_CATEGORY, attributes: CAR_ATTRIBUTES } : { categoryId: SOFA_CATEGORY }),
    provider: { name: "Jan de Vries", city: "Utrecht" },
    settings: [{ portal: "portal_a", showcontact: true, autoreplace: false, video: null }],
    ...overrides,
  });

/** The updatable fields of each subject's write, from the OpenAPI document: each must have a generator. */
export function checkGeneratorsCoverDocument() {
  const schemas = committed.components.schemas as unknown as Record<
    string,
    { properties: Record<string, { description?: string }> }
  >;
  for (const [name, subject] of Object.entries(subjects)) {
    const properties = schemas[subject.write.schema]?.properties ?? {};
    const updatable = Object.entries(properties)
      .filter(([field, property]) => {
        const note = property.description ?? "";
        return !subject.identity.includes(field) && !/^(Read-only|Fixed|Must match)/.test(note);
      })
      .map(([field]) => field);
    expect(Object.keys(subject.fields).sort(), name).toEqual(updatable.sort());
  }
}

/**
 * The property: the subject read, sent back whole with one field changed, read again. One user (with its
 * contact, folder and ad) serves every run.
 */
export async function roundTrips(name: string) {
  const subject = subjects[name] as Subject;
  const made = await makeRun();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...Object.keys(subject.fields)), fc.integer(), async (field, seed) => {
      const where = await subject.create(made);
      const before = await read(where);
      const values = subject.fields[field] as FieldChange;
      const arbitrary = values instanceof fc.Arbitrary ? values : values(before, made);
      const value = fc
        .sample(arbitrary, { seed, numRuns: 20 })
        .find((candidate) => JSON.stringify(candidate) !== JSON.stringify(before[field]));
      fc.pre(value !== undefined);
      const answer = await call(subject.write.method, subject.write.path(before), {
        key,
        body: { ...before, [field]: value },
      });
      expect(answer.status, `${field} = ${JSON.stringify(value)}: ${JSON.stringify(answer.body)}`).toBe(200);
      const after = await read(where);
      const ignored = new Set(["updated", field, ...(subject.derived?.[field] ?? [])]);
      const rest = (resource: Resource) =>
        Object.fromEntries(Object.entries(resource).filter(([k]) => !ignored.has(k)));
      expect(rest(after), field).toEqual(rest(before));
      if (typeof value === "object" && value !== null) expect(after[field], field).toMatchObject(value);
      else expect(after[field], field).toEqual(value);
      await subject.afterRun?.(where);
    }),
    { numRuns: RUNS },
  );
}
