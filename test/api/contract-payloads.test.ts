import { beforeAll, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { call, newClient } from "../harness/api";
import { contactBody, createAd, createUser, GPSR_VALUES, SOFA_CATEGORY } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

/**
 * Every operation of the original specification (docs/contract.md says where its rules are kept), sent
 * with the payload it describes: every field its tables list for the operation, identity and fixed fields
 * included, in every form it names. Each is accepted: the answer may be a refusal the state calls for,
 * never an unknown field, a failed validation or a fixed field for a field the specification lists.
 */

let key: string;
/** The state the payloads name: an active, connected user with a contact, folder, ad, task and manufacturer. */
const s = {} as {
  userId: number;
  otherUserId: number;
  contactId: number;
  folderId: number;
  adId: number;
  externalAdId: number;
  taskId: number;
  manufacturerId: number;
  activationtoken: string;
};

/** The state on `shard`, for an internal client of a group there (the dev keys' kind of client). */
async function worldOn(shard: number) {
  key = (await newClient({ internal: true, shard })).key;
  s.userId = await connectedSeller(key, key, 10_000);
  const other = await createUser(key);
  s.otherUserId = other.userId;
  s.activationtoken = other.activation.activationtoken;
  const contacts = await call("POST", "/contacts/", { key, body: contactBody(s.userId) });
  s.contactId = contacts.body.data.at(-1)?.contactId as number;
  const folders = await call("POST", "/folders/", { key, body: { userId: s.userId, description: "Voorraad" } });
  s.folderId = folders.body.data.at(-1)?.folderId as number;
  const ad = await createAd(key, s.userId, { externalAdId: 7001 });
  s.adId = ad.adId;
  s.externalAdId = 7001;
  const tasks = await call("POST", "/tasks/", {
    key,
    body: { userId: s.userId, portal: "portal_a", time: "09:00", enabled: false },
  });
  s.taskId = tasks.body.data.at(-1)?.taskId as number;
  const manufacturer = await call("POST", "/manufacturers/", { key, body: manufacturerFields() });
  s.manufacturerId = manufacturer.body.data.manufacturerId as number;
}

// ---- the specification's field lists, as payloads ----

/** User: the fields it marks writable (W). */
/** The address fields a user and an ad's provider share. */
const address = {
  address: "Dorpsstraat",
  houseNumber: "12a",
  postalCode: "1234 AB",
  city: "Utrecht",
  county: "UT",
  country: "NL",
};
const userFields = () => ({
  clientId: null,
  externalUserId: Math.floor(Math.random() * 1e9),
  companyName: "Garage De Vries",
  firstName: "Jan",
  lastName: "de Vries",
  dateOfBirth: "1970-05-01",
  ...address,
  email: "jan@garagedevries.nl",
  website: "www.garagedevries.nl",
  phone: "030-1234567",
  fax: "030-1234568",
  cellular: "06-12345678",
});
/** Contact: its writable fields, and `country`, which "appears in payloads". */
const contactFields = () => ({
  ...contactBody(s.userId),
  website: "www.showroom.nl",
  chathandle: "@showroom",
  country: "NL",
});
/** User settings: every field, the internal-only ones included (the payloads are an internal client's). */
const settingsFields = () => ({
  userId: s.userId,
  mainUserId: s.otherUserId,
  walletUserId: s.userId,
  maxContacts: 10,
  status: "active",
  type: "supply",
  allowbids: true,
  showcontact: true,
  itemsPerPage: 25,
  maxImages: 24,
  groupId: 93,
  categoryId: SOFA_CATEGORY,
  attributes: [
    { key: "condition", value: "gebruikt" },
    { key: "delivery", value: "ophalen of verzenden" },
  ],
  budgetNotifyLimit: 500,
});
/** Ad: its writable fields; an update adds adId and keeps userId, externalAdId and categoryId. */
const adFields = () => ({
  userId: s.userId,
  contactId: s.contactId,
  folderId: s.folderId,
  status: "active",
  externalAdId: s.externalAdId,
  type: "supply",
  title: "Leren bank, drie zits",
  imagetext: "Als nieuw",
  description: "Mooie <b>leren</b> bank in goede staat.",
  categoryId: SOFA_CATEGORY,
  attributes: [
    { portal: "portal_a", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }, ...GPSR_VALUES] },
    { portal: "portal_b", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
  ],
  url: "www.garagedevries.nl/bank",
  price: { model: "bidding", price: 25000, minimumBid: 20000, shippingCosts: 1500, retail: 40000 },
  settings: [{ portal: "portal_a", showcontact: true, autoreplace: false, video: "www.example.nl/bank.mp4" }],
  misc: { licensePlate: null },
  provider: { name: "Jan de Vries", ...address, phone: "030-1234567" },
});
const manufacturerFields = () => ({
  userId: s.userId,
  groupId: 93,
  categoryId: SOFA_CATEGORY,
  brands: ["Leolux"],
  manufacturerTradename: "Leolux B.V.",
  manufacturerAddress: "Kazernestraat 1, Venlo",
  manufacturerEmail: "info@leolux.nl",
  description: "Meubels",
});
const taskFields = () => ({
  userId: s.userId,
  adId: [s.adId],
  time: "09:30",
  dayOfWeek: ["monday", "friday"],
  portal: "portal_a",
  feature: "upcall",
  enabled: false,
});
const publish = (adId: number | number[], portal = "portal_a") => ({ userId: s.userId, adId, portal, images: true });
const imageList = () => [{ image: { url: "http://images.test/red.png" } }, { image: { path: "fotos/b.jpg" } }];

interface Payload {
  /** The operation as the specification writes it, e.g. `PUT /publish/`. */
  spec: string;
  method: string;
  path: () => string;
  body?: () => unknown;
}
/** A payload for the operation `spec` names; `path` fills in its placeholders (or a query) when it has any. */
const op = (spec: string, body?: () => unknown, path?: () => string): Payload => {
  const [method, written] = spec.split(" ") as [string, string];
  return { spec, method, path: path ?? (() => written), body };
};

const payloads: Payload[] = [
  // Portal connection (OAuth)
  op("GET /oauth/<userId>/<portal>/", undefined, () => `/oauth/${s.userId}/portal_a/?useCache=1`),
  op("POST /oauth/<userId>/<portal>/", undefined, () => `/oauth/${s.otherUserId}/portal_b/`),
  op(
    "PUT /oauth/<userId>/<portal>/",
    () => ({
      code: "a-code-the-marketplace-never-gave",
      state: "a-state",
    }),
    () => `/oauth/${s.otherUserId}/portal_b/`,
  ),
  op("DELETE /oauth/<userId>/<portal>/", undefined, () => `/oauth/${s.otherUserId}/portal_b/`),
  // Login link
  op("POST /auth/link/generate/", () => ({ userId: s.userId })),
  op("POST /auth/link/validate/", () => ({
    userId: s.userId,
    accesstoken: "a-token-never-handed-out",
  })),
  // User settings, in both path forms
  ...["/user/settings/", "/usersettings/"].flatMap((base) => [
    op(`GET ${base}[<userId>]`, undefined, () => `${base}${s.userId}`),
    op(`GET ${base}[<userId>] (none)`, undefined, () => `${base}?userId=${s.userId}`),
    op(`POST ${base}`, settingsFields, () => base),
    op(
      `PATCH ${base}`,
      () => ({
        userId: s.userId,
        showcontact: false,
        attributes: [{ key: "condition", value: "nieuw" }],
        budgetNotifyLimit: 1000,
      }),
      () => base,
    ),
  ]),
  // User ad settings
  op("GET /user/adsettings/<userId>/", undefined, () => `/user/adsettings/${s.userId}/`),
  op("GET /user/adsettings/<userId>/<portal>", undefined, () => `/user/adsettings/${s.userId}/portal_a`),
  op("POST /user/adsettings/", () => ({
    userId: s.userId,
    settings: [
      { portal: "portal_a", header: "<p>Welkom</p>", footer: "<b>Tot ziens</b>", allowContactByEmail: true },
      { portal: "website", header: "Welkom", footer: "Tot ziens", allowContactByEmail: false },
    ],
  })),
  // Users
  op("GET /users/", undefined, () => "/users/?useCache=1&page=1&itemsPerPage=25"),
  op("GET /users/<userId>/", undefined, () => `/users/${s.userId}/?useCache=0&page=1&itemsPerPage=1`),
  op("POST /users/", userFields),
  op("PUT /users/", () => ({ ...userFields(), userId: s.otherUserId })),
  // Contacts
  op("GET /contacts/<userId>/", undefined, () => `/contacts/${s.userId}/?useCache=1&page=1&itemsPerPage=100`),
  op("GET /contacts/<userId>/<contactId>", undefined, () => `/contacts/${s.userId}/${s.contactId}`),
  op("POST /contacts/", contactFields),
  op("PUT /contacts/", () => ({ ...contactFields(), contactId: s.contactId })),
  // Folders
  op("GET /folders/<userId>", undefined, () => `/folders/${s.userId}?useCache=1&page=1&itemsPerPage=10&total=true`),
  op("GET /folders/<userId>/<folderId>", undefined, () => `/folders/${s.userId}/${s.folderId}`),
  op("POST /folders/", () => ({ userId: s.userId, description: "Inruil" })),
  op("PUT /folders/", () => ({
    userId: s.userId,
    folderId: s.folderId,
    description: "Verkocht",
  })),
  // Ads
  op("GET /ads/", undefined, () => {
    const query = new URLSearchParams({
      useCache: "1",
      page: "1",
      itemsPerPage: "25",
      "order[0][field]": "price",
      "order[0][descending]": "true",
      adId: String(s.adId),
      simple: "false",
      userId: String(s.userId),
      folderId: String(s.folderId),
      status: "active",
      type: "supply",
      title: "bank",
      description: "leren",
      groupId: "93",
      groupDescription: "Huis",
      categoryId: String(SOFA_CATEGORY),
      categoryDescription: "Banken",
      searchkeyword: "bank",
      searchportal: "!portal_b",
      "searchattributes[0][portal]": "portal_a",
      "searchattributes[0][locale]": "nl_NL",
      "searchattributes[0][key]": "condition",
      "searchattributes[0][value_equals]": "gebruikt",
      searchmanufacturer: "false",
    });
    return `/ads/?${query}`;
  }),
  op("GET /ads/ (adId forms)", undefined, () => `/ads/?adId[]=${s.adId}&adId[]=${s.adId}&simple=true&itemsPerPage=500`),
  op("POST /ads/", () => ({ ...adFields(), externalAdId: 7002 })),
  op("PUT /ads/", () => ({ ...adFields(), adId: s.adId })),
  op("PATCH /ads/", () => ({ adId: s.adId, status: "active" })),
  op("PATCH /ads/batch", () => ({ userId: s.userId, adId: [s.adId], status: "active" })),
  // Ad settings
  op("GET /adsettings/<adId>", undefined, () => `/adsettings/${s.adId}`),
  op("GET /adsettings/", undefined, () => `/adsettings/?adId=${s.adId}`),
  op("POST /adsettings/", () => ({
    adId: s.adId,
    settings: [{ portal: "portal_a", showcontact: false, autoreplace: true, video: "https://www.example.nl/a.mp4" }],
  })),
  // Images
  op("GET /images/<adId>", undefined, () => `/images/${s.adId}`),
  op(
    "POST /images/<adId>",
    () => ({
      adId: s.adId,
      images: imageList(),
      autoupdate: false,
    }),
    () => `/images/${s.adId}`,
  ),
  op(
    "PUT /images/<adId>",
    () => ({
      adId: s.adId,
      images: imageList(),
      autoupdate: true,
    }),
    () => `/images/${s.adId}`,
  ),
  op("POST /imageswitch/", () => ({ adId: s.adId, images: [1, 2] })),
  op("POST /imageshift/", () => ({ adId: s.adId, images: [2, 1] })),
  op("POST /imagerotate/", () => ({ adId: s.adId, images: [1], rotate: 90 })),
  op("DELETE /images/", () => ({ adId: s.adId, images: [1] })),
  // Image status, every path form with the contract's body
  op("GET /imagestatus/<userId>/", undefined, () => `/imagestatus/${s.userId}/`),
  op("GET /imagestatus/<userId>/<adId>", undefined, () => `/imagestatus/${s.userId}/${s.adId}`),
  op("POST /imagestatus/", () => ({ userId: s.userId, adId: [s.adId] })),
  op(
    "POST /imagestatus/<userId>/",
    () => ({
      userId: s.userId,
      adId: [s.adId],
    }),
    () => `/imagestatus/${s.userId}/`,
  ),
  op(
    "POST /imagestatus/<userId>/<adId>",
    () => ({
      userId: s.userId,
      adId: [s.adId],
    }),
    () => `/imagestatus/${s.userId}/${s.adId}`,
  ),
  // Publish
  op("POST /publish/", () => publish(s.adId)),
  op("PUT /publish/", () => publish(s.adId)),
  op("POST /publish/batch", () => publish([s.adId], "website")),
  op("PUT /publish/batch", () => publish([s.adId], "website")),
  op("PUT /publish/batchauto", () => publish(s.adId)),
  op("POST /publish/batchall", () => publish([s.adId], "meta")),
  // Features
  op("GET /features/<portal>/<adId>", undefined, () => `/features/portal_a/${s.adId}`),
  op("GET /features/?portal=&adId=", undefined, () => `/features/?portal=portal_a&adId=${s.adId}`),
  op("POST /features/", () => ({ adId: s.adId, portal: "portal_a", feature: "dagtopper" })),
  // Status
  op("GET /status/<userId>/<adId>", undefined, () => `/status/${s.userId}/${s.adId}`),
  op("GET /status/totals/<userId>/", undefined, () => `/status/totals/${s.userId}/`),
  op("POST /status/", () => ({
    userId: s.userId,
    adId: [s.adId],
    force: true,
    page: 1,
    itemsPerPage: 1000,
  })),
  // Tasks
  op("GET /tasks/<userId>/", undefined, () => `/tasks/${s.userId}/?useCache=1&page=1&itemsPerPage=100`),
  op("GET /tasks/<userId>/<portal>/", undefined, () => `/tasks/${s.userId}/portal_a/`),
  op("GET /tasks/<userId>/<portal>/<taskId>", undefined, () => `/tasks/${s.userId}/portal_a/${s.taskId}`),
  op("GET /tasks/?userId=", undefined, () => `/tasks/?userId=${s.userId}`),
  op("POST /tasks/", taskFields),
  op("PUT /tasks/", () => ({ ...taskFields(), taskId: s.taskId })),
  // Manufacturers
  op("GET /manufacturers/", undefined, () => {
    const query = new URLSearchParams({
      useCache: "1",
      manufacturerId: String(s.manufacturerId),
      userId: String(s.userId),
      groupId: "93",
      categoryId: String(SOFA_CATEGORY),
      brand: "Leolux",
      categoryDescription: "Banken",
      manufacturerTradename: "Leolux B.V.",
      aiassist: "false",
    });
    return `/manufacturers/?${query}`;
  }),
  op("POST /manufacturers/", manufacturerFields),
  op("PUT /manufacturers/", () => ({
    ...manufacturerFields(),
    manufacturerId: s.manufacturerId,
  })),
  op("POST /manufacturers/batch/", () => ({
    manufacturerId: s.manufacturerId,
    userId: s.userId,
    adId: [s.adId],
    publish: false,
  })),
  // User activation: the token of the user's creation first (generating a new one revokes it)
  op("POST /user/activate/", () => ({
    userId: s.otherUserId,
    activationtoken: s.activationtoken,
  })),
  op("POST /user/activate/generate/", () => ({ userId: s.otherUserId })),
  // Bids
  op("POST /bids/markasread/", () => ({
    userId: s.userId,
    portal: "portal_a",
    bidId: [1, 2],
  })),
  op("DELETE /bids/markasread/", () => ({
    userId: s.userId,
    portal: "website",
    bidId: ["b-1"],
  })),
  // Catalogue
  op("POST /attributes/", () => ({
    categoryId: [SOFA_CATEGORY],
    locale: ["nl_NL"],
    userId: s.userId,
    useCache: true,
    conversiontree: false,
    page: 1,
    itemsPerPage: 25,
  })),
  op("POST /groups/", () => ({
    useCache: true,
    groupId: [93],
    userId: s.userId,
    status: "active",
    availability: true,
    locale: ["nl_NL"],
    page: 1,
    itemsPerPage: 25,
    total: false,
  })),
  // Statistics
  op("POST /statistics/", () => ({
    adId: [s.adId],
    dateStart: "2026-10-01",
    dateEnd: "2026-10-31",
    showDaily: true,
    showTotals: true,
    portal: "portal_a",
  })),
  // Removals last: they end what the payloads above name.
  op("DELETE /publish/", () => publish(s.adId)),
  op("DELETE /publish/batch", () => publish([s.adId], "website")),
  op("DELETE /publish/batchall", () => publish([s.adId], "meta")),
  op("DELETE /tasks/", () => ({ taskId: s.taskId, userId: s.userId, portal: "portal_a" })),
  op("DELETE /manufacturers/", () => ({ manufacturerId: s.manufacturerId })),
  op("DELETE /images/batch/", () => ({ userId: s.userId, adId: [s.adId] })),
  op("DELETE /images/<adId>", undefined, () => `/images/${s.adId}`),
  op("DELETE /contacts/", () => ({ userId: s.userId, contactId: s.contactId })),
  op("DELETE /folders/", () => ({ userId: s.userId, folderId: s.folderId })),
  op("DELETE /ads/batch/", () => ({ userId: s.userId, adId: [s.adId] })),
  op("DELETE /ads/<adId>", undefined, () => `/ads/${s.adId}`),
  op("DELETE /users/ with {userId, ip}", () => ({ userId: s.otherUserId, ip: "192.0.2.10" })),
  op("DELETE /users/<userId>", undefined, () => `/users/${s.userId}`),
];

/** The document's operation a concrete call reaches, e.g. `PUT /rest/v1/oauth/{userId}/{portal}`. */
function operationOf(method: string, path: string): string | undefined {
  const bare = `/rest/v1${path.split("?")[0]?.replace(/\/+$/, "")}`;
  const paths = committed.paths as Record<string, Record<string, unknown>>;
  // A literal segment wins over a parameter (`/images/batch` over `/images/{adId}`), as in the router.
  const byLiterals = Object.keys(paths).sort((a, b) => a.split("{").length - b.split("{").length);
  const template = byLiterals.find(
    (candidate) =>
      new RegExp(`^${candidate.replace(/\{\w+\}/g, "[^/]+")}$`).test(bare) &&
      method.toLowerCase() in (paths[candidate] ?? {}),
  );
  return template && `${method} ${template}`;
}

describe("the contract's own payloads", () => {
  it("reach an operation of the document each, and cover every operation but the API's own additions", () => {
    const reached = payloads.map((p) => operationOf(p.method, p.path()));
    expect(reached.filter((operation) => operation === undefined)).toEqual([]);
    // What the API adds to the contract: its own resources (jobs, events, webhooks, the wallet, reading
    // bids, the dry run of publishing, the named categories, moving client groups, the archive, stock syncs, feeds) and the service calls
    // (health, the client, the document).
    const additions =
      /^\w+ \/rest\/v1\/(health|clientgroups|client|openapi|jobs|events|webhooks|wallet|bids\/\{userId\}|publish\/preflight|categories|archive|syncs|feeds)/;
    const documented = Object.entries(committed.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.filter((operation) => !additions.test(operation) && !reached.includes(operation))).toEqual([]);
  });
});

// A client's shard is its group's: the payloads run for a client on each (src/db/shards.ts).
describe.each([1, 2])("the contract's own payloads, for a client on shard %i", (shard) => {
  beforeAll(() => worldOn(shard), 60_000);

  it.each(payloads.map((p) => [p.spec, p] as const))("%s is accepted as the specification writes it", async (_, p) => {
    const answer = await call(p.method, p.path(), { key, body: p.body?.() });
    const refusedFields = (answer.body.errorDetails ?? []).filter((d) =>
      ["unknown_field", "validation_failed", "not_updatable", "malformed_body"].includes(d.code),
    );
    expect(refusedFields, JSON.stringify(answer.body)).toEqual([]);
    expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500);
  });
});
