// What a search of ads filters and orders by, as SQL: the spec's query fields become conditions on the
// ads and their users, the keyword index's match, and the order keys. searchPlans.ts plans and pages with them.
import { type AnyColumn, and, asc, desc, eq, gte, lte, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { inList } from "../../db/inList";
import { adAttributes, ads, categories, groups } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { MARKETPLACE_PROFILES, MARKETPLACES, PRODUCT_SAFETY_MARKETPLACES } from "../../lib/marketplaces";
import { GPSR_KEYS } from "../catalogue/catalogue";
import { type Caller, clientIdOf, isInternal, visibleUsers } from "../shared/access";
import type { AdsQueryInput, SearchAttributeInput } from "./schemas";

/**
 * "Contains", case-insensitive for ASCII as LIKE is, by `instr`: no pattern, so nothing to escape and no
 * limit on its length (D1 refuses LIKE patterns over 50 bytes as "too complex").
 */
const containsText = (column: AnyColumn, value: string) => sql`instr(lower(${column}), lower(${value})) > 0`;

/**
 * The keyword index's audience tokens a search is limited to (migration 0015): a client's ads, and one
 * user's when the search names a user. An internal client's search sees every user who is not deleted, which
 * is what the index holds.
 */
export function audienceTokens(caller: Caller, userId: number | undefined): string[] {
  return [...(isInternal(caller) ? [] : [`c${clientIdOf(caller)}`]), ...(userId === undefined ? [] : [`u${userId}`])];
}

/**
 * FTS5 query: every word must occur in the title or description (as a prefix), each quoted so user input is
 * never FTS syntax, and the ad must be in each audience.
 */
export function ftsQuery(keyword: string, audience: string[] = []): string {
  const words = keyword
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => `"${word.replaceAll('"', '""')}"*`)
    .join(" ");
  return [`{title description} : (${words})`, ...audience.map((token) => `audience : "${token}"`)].join(" AND ");
}

const closeDate = (portal: string) =>
  sql`(SELECT close_date FROM ad_publications p WHERE p.ad_id = ${ads.id} AND p.portal = ${portal})`;

/** Order expressions of the spec's order fields. `closeDate` is the soonest close over all portals. */
export const ORDER_EXPRESSIONS: Record<string, SQL> = {
  price: sql`${ads.price}`,
  // Ids are handed out in creation order and creation times never run backwards (see createAd).
  created: sql`${ads.id}`,
  updated: sql`${ads.updatedAt}`,
  title: sql`${ads.title} COLLATE NOCASE`,
  closeDate: sql`(SELECT min(close_date) FROM ad_publications p WHERE p.ad_id = ${ads.id})`,
  ...Object.fromEntries(MARKETPLACES.map((m) => [MARKETPLACE_PROFILES[m].closeDateOrder, closeDate(m)])),
  closeDateMeta: closeDate("website"),
};

/** An order key in its direction. */
export const directed = (key: SQLWrapper | AnyColumn, descending: boolean) => (descending ? desc(key) : asc(key));

/** The attribute rows that match one `searchattributes` entry, in the category the search names. */
export function attributeMatch(a: SearchAttributeInput, categoryId: number | undefined): SQL {
  const match: SQL[] = [eq(adAttributes.portal, a.portal), eq(adAttributes.key, a.key)];
  if (categoryId !== undefined) match.push(eq(adAttributes.categoryId, categoryId));
  if (a.value_equals !== undefined) match.push(eq(adAttributes.value, String(a.value_equals)));
  if (a.value_equals_list) match.push(inList(adAttributes.value, a.value_equals_list.map(String)));
  if (a.value_lessequal !== undefined) match.push(lte(adAttributes.valueNumber, a.value_lessequal));
  if (a.value_greaterequal !== undefined) match.push(gte(adAttributes.valueNumber, a.value_greaterequal));
  return and(...match) as SQL;
}

// The matching ads are listed once (on the search index) and looked up by id: a correlated EXISTS walked
// every matching attribute row for each ad (6 s for 4,000 ads in one category).
export const attributeAdIds = (a: SearchAttributeInput, categoryId: number | undefined) =>
  sql`SELECT ${adAttributes.adId} FROM ${adAttributes} WHERE ${attributeMatch(a, categoryId)}`;

/** A list's conditions, by name: which users' ads the caller may see, and the query's own filters. */
export interface ListConditions {
  visible: SQL;
  filters: SQL[];
}

export function conditions(caller: Caller, q: AdsQueryInput): ListConditions {
  const where: SQL[] = [];
  if (q.adId) where.push(inList(ads.id, q.adId));
  if (q.userId !== undefined) where.push(eq(ads.userId, q.userId));
  if (q.folderId !== undefined) where.push(eq(ads.folderId, q.folderId));
  if (q.status) where.push(eq(ads.status, q.status));
  if (q.type) where.push(eq(ads.type, q.type));
  if (q.title) where.push(containsText(ads.title, q.title));
  if (q.description) where.push(containsText(ads.description, q.description));
  if (q.categoryId !== undefined) where.push(eq(ads.categoryId, q.categoryId));
  if (q.groupId !== undefined) where.push(eq(categories.groupId, q.groupId));
  if (q.categoryDescription) {
    where.push(
      sql`(${containsText(categories.descriptionNl, q.categoryDescription)} OR ${containsText(categories.descriptionEn, q.categoryDescription)})`,
    );
  }
  if (q.groupDescription) {
    where.push(
      sql`(${containsText(groups.descriptionNl, q.groupDescription)} OR ${containsText(groups.descriptionEn, q.groupDescription)})`,
    );
  }
  if (q.searchkeyword) {
    const match = ftsQuery(q.searchkeyword, audienceTokens(caller, q.userId));
    where.push(sql`${ads.id} IN (SELECT rowid FROM ads_fts WHERE ads_fts MATCH ${match})`);
  }
  if (q.searchportal) {
    const inverted = q.searchportal.startsWith("!");
    const portal = q.searchportal.replace(/^!/, "");
    if (portal === "meta" && !isInternal(caller))
      throw DomainError.of("internal_only", "searchportal: meta is for internal clients only");
    const active =
      portal === "meta"
        ? sql`EXISTS (SELECT 1 FROM ad_publications p WHERE p.ad_id = ${ads.id} AND p.active = 1)`
        : sql`EXISTS (SELECT 1 FROM ad_publications p WHERE p.ad_id = ${ads.id} AND p.portal = ${portal} AND p.active = 1)`;
    where.push(inverted ? sql`NOT ${active}` : active);
  }
  for (const a of q.searchattributes ?? []) where.push(sql`${ads.id} IN (${attributeAdIds(a, q.categoryId)})`);
  if (q.searchmanufacturer !== undefined) {
    // Only categories that carry the product-safety attributes take part.
    const hasGpsr = sql`EXISTS (SELECT 1 FROM attribute_definitions d WHERE d.category_id = ${ads.categoryId} AND d.portal IN ${PRODUCT_SAFETY_MARKETPLACES} AND d.key = ${GPSR_KEYS[0]})`;
    where.push(
      q.searchmanufacturer
        ? sql`${hasGpsr} AND ${ads.manufacturerId} IS NOT NULL`
        : sql`${hasGpsr} AND ${ads.manufacturerId} IS NULL`,
    );
  }
  return { visible: visibleUsers(caller), filters: where };
}

/** Query fields that page or shape the response; every other field that is set filters it. */
