import { env } from "cloudflare:test";
import { sql } from "drizzle-orm";
import { expect } from "vitest";
import { d1Statement } from "../../src/db/client";
import { groupOfUser, ID_BLOCK_SLACK, leasingIdBlocks, nextId } from "../../src/db/ids";
import { ads, publishJobs } from "../../src/db/schema";
import { shardDatabase } from "../../src/db/shards";
import { call } from "./api";

/** A valid user body; tests override what they are about. */
let externalUserSeq = 1_000_000;

const nextExternalUserId = () => {
  externalUserSeq += 1;
  return externalUserSeq;
};

/** A user as a client creates it; each gets its own externalUserId (unique per client). */
export const userBody = (overrides: Record<string, unknown> = {}) => ({
  externalUserId: nextExternalUserId(),
  companyName: "Garage De Vries",
  firstName: "Jan",
  lastName: "de Vries",
  address: "Dorpsstraat",
  houseNumber: "12a",
  postalCode: "1234ab",
  city: "Utrecht",
  county: "UT" as const,
  email: "jan@garagedevries.nl",
  phone: "030-1234567",
  ...overrides,
});

export const contactBody = (userId: number, overrides: Record<string, unknown> = {}) => ({
  userId,
  name: "Showroom Noord",
  address: "Industrieweg",
  houseNumber: "7",
  postalCode: "9711 AA",
  city: "Groningen",
  county: "GR",
  phone: "050-7654321",
  ...overrides,
});

/** A manufacturer record (product-safety data) of the user, as a client creates it. */
export const manufacturerBody = (userId: number, overrides: Record<string, unknown> = {}) => ({
  userId,
  manufacturerTradename: "Lampen BV",
  manufacturerAddress: "Lichtweg 1, Eindhoven",
  manufacturerEmail: "info@lampen.nl",
  ...overrides,
});

/** Creates a user through the API and returns the answer's data. */
export async function createUser(key: string, overrides: Record<string, unknown> = {}) {
  const answer = await call("POST", "/users/", { key, body: userBody(overrides) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** Category 9301 (Banken, group 93 Huis en Inrichting): free to place, condition mandatory on the portals. */
export const SOFA_CATEGORY = 9301;

/** Category 9204 (Brommers): placing an ad costs money on portal_a. */
export const PAID_CATEGORY = 9204;

/** Category 9101 (Personenauto's, automotive group 91). */
export const CAR_CATEGORY = 9101;

/** The product-safety attributes portal_a asks of business sellers. */
export const GPSR_VALUES = [
  { key: "manufacturerTradename", value: "Meubelfabriek B.V." },
  { key: "manufacturerAddress", value: "Fabrieksweg 1, 1234 AB Utrecht" },
  { key: "manufacturerEmail", value: "veiligheid@meubelfabriek.nl" },
];

/** What portal_a requires of a passenger car. */
export const CAR_ATTRIBUTES = [
  {
    portal: "portal_a",
    locale: "nl_NL",
    values: [
      { key: "brand", value: "Volkswagen" },
      { key: "model", value: "Golf" },
      { key: "mileage", value: 85000 },
      { key: "year", value: 2018 },
      { key: "fuel", value: "benzine" },
    ],
  },
];

/**
 * The attribute sets the portals require of a category, so that a test ad can be published: the
 * automotive group (91) asks portal_a for the car's details; every other category asks both portals
 * for its condition, and portal_a business sellers for the product-safety data; an unknown category
 * gets none.
 */
export const requiredAttributes = (categoryId: unknown) =>
  typeof categoryId !== "number" || categoryId < 9100 || categoryId >= 10000
    ? []
    : Math.floor(categoryId / 100) === 91
      ? CAR_ATTRIBUTES
      : [
          { portal: "portal_a", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }, ...GPSR_VALUES] },
          { portal: "portal_b", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
        ];

export const adBody = (userId: number, overrides: Record<string, unknown> = {}) => ({
  userId,
  externalAdId: 501,
  categoryId: SOFA_CATEGORY,
  title: "Leren bank, drie zits",
  description: "Mooie <b>leren</b> bank in goede staat.",
  price: { model: "fixed", price: 25000 },
  attributes: requiredAttributes(overrides.categoryId ?? SOFA_CATEGORY),
  ...overrides,
});

/** Creates an ad through the API and returns the answer's data. */
export async function createAd(key: string, userId: number, overrides: Record<string, unknown> = {}) {
  const answer = await call("POST", "/ads/", { key, body: adBody(userId, overrides) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** Activates a user with the token of its creation. */
export async function activate(key: string, user: { userId: number; activation: { activationtoken: string } }) {
  const answer = await call("POST", "/user/activate/", {
    key,
    body: { userId: user.userId, activationtoken: user.activation.activationtoken },
  });
  expect(answer.status).toBe(200);
}

/**
 * `count` ads of a user written straight to its shard's D1 (ids ascending from its group's block; every
 * third one archived).
 */
export async function seedAds(userId: number, count: number, shard = 1) {
  const d1 = leasingIdBlocks({ number: shard, d1: shardDatabase(env, shard), directory: env.DIRECTORY });
  // In inserts of at most ID_BLOCK_SLACK rows, as the API writes them.
  for (let from = 1; from <= count; from += ID_BLOCK_SLACK) {
    await d1Statement(
      d1,
      sql`WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${Math.min(count, from + ID_BLOCK_SLACK - 1)})
       INSERT INTO ads (id, user_id, title, description, category_id, price_model, price, status)
       SELECT ${nextId(ads, groupOfUser(userId), sql`i - ${from}`)}, ${userId}, 'Seeded ad ' || i, 'Seeded', ${SOFA_CATEGORY}, 'fixed', i,
         CASE WHEN i % 3 = 0 THEN 'archive' ELSE 'active' END FROM n`,
    ).run();
  }
}

/**
 * A finished website placement for each ad of a user, written straight to its shard's D1: other users'
 * jobs, which a request about another user must not read.
 */
export async function seedJobs(userId: number, shard = 1) {
  const d1 = leasingIdBlocks({ number: shard, d1: shardDatabase(env, shard), directory: env.DIRECTORY });
  const ids = (
    await shardDatabase(env, shard)
      .prepare("SELECT id FROM ads WHERE user_id = ? ORDER BY id")
      .bind(userId)
      .all<{ id: number }>()
  ).results.map((ad) => ad.id);
  for (let from = 0; from < ids.length; from += ID_BLOCK_SLACK) {
    const chunk = JSON.stringify(ids.slice(from, from + ID_BLOCK_SLACK));
    await d1Statement(
      d1,
      sql`INSERT INTO queue_items (id, ad_id, user_id, portal, action, status, nonce)
       SELECT ${nextId(publishJobs, groupOfUser(userId), sql`CAST(j.key AS INTEGER)`)}, j.value, ${userId}, 'website', 'publish', 'done', 'seeded'
       FROM json_each(${chunk}) j`,
    ).run();
  }
  return ids.length;
}
