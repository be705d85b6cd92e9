// How a list of ads is read: the plan its filters and order choose, and each plan's queries of a page.
import { type AnyColumn, and, asc, eq, gt, lt, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { SQLiteSelect } from "drizzle-orm/sqlite-core";
import { adAttributes, ads, categories, groups, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import type { Caller } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { type AdsQueryInput, encodeCursor, type PagePositionValue } from "./schemas";
import {
  attributeAdIds,
  attributeMatch,
  audienceTokens,
  directed,
  ftsQuery,
  type ListConditions,
  ORDER_EXPRESSIONS,
} from "./searchFilters";
import { viewColumns } from "./views";

const PAGING_FIELDS = new Set(["useCache", "page", "cursor", "itemsPerPage", "simple", "order"]);

/** Whether the query filters by nothing but `fields`. */
export const filtersWithin = (q: AdsQueryInput, fields: string[]) =>
  Object.entries(q).every(
    ([field, value]) => value === undefined || PAGING_FIELDS.has(field) || fields.includes(field),
  );

/** Whether the query orders by creation (which is id order) alone. */
export const inCreationOrder = (q: AdsQueryInput) => (q.order ?? []).every(({ field }) => field === "created");

/** Whether the query filters by nothing but `fields` and orders by creation. */
const filtersOnly = (q: AdsQueryInput, fields: string[]) => filtersWithin(q, fields) && inCreationOrder(q);

/**
 * How a list is read, chosen by what it filters and how it is ordered:
 * - `keywordIndex`: a keyword search (and `userId`) in id order. The keyword index answers it alone: it
 *   holds who may see each ad and walks its matches in rowid (ad id) order.
 * - `attributeIndex`: an attribute search in its category (and `userId`) in id order. The attribute
 *   index answers it alone: its rows carry the category and the user.
 * - `matchList`: any other search. Its matches are listed once with their order keys, and the count and
 *   the page both come from that list.
 * - `filteredPage`: no search. A page of the filtered ads, and their count (a sum of tallies when it
 *   filters by tallied columns only).
 */
export type SearchPlan = "keywordIndex" | "attributeIndex" | "matchList" | "filteredPage";

const isKeywordIndexSearch = (q: AdsQueryInput) =>
  Boolean(q.searchkeyword) && filtersOnly(q, ["searchkeyword", "userId"]);
const isAttributeIndexSearch = (q: AdsQueryInput) =>
  Boolean(q.searchattributes?.length) &&
  q.categoryId !== undefined &&
  filtersOnly(q, ["searchattributes", "categoryId", "userId"]);
const isSearch = (q: AdsQueryInput) => Boolean(q.searchkeyword || q.searchattributes);

export function choosePlan(q: AdsQueryInput): SearchPlan {
  if (isKeywordIndexSearch(q)) return "keywordIndex";
  if (isAttributeIndexSearch(q)) return "attributeIndex";
  if (isSearch(q)) return "matchList";
  return "filteredPage";
}

/** The SQL of an index plan: the page's ad ids, in id order, and the number of matches. */
export function indexedIds(
  plan: "keywordIndex" | "attributeIndex",
  caller: Caller,
  q: AdsQueryInput,
  visible: SQL,
  window: PageWindow,
): { pageIds: SQL; total: SQL } {
  const direction = sql.raw(window.descending ? "DESC" : "ASC");
  const paged = sql`ORDER BY 1 ${direction} LIMIT ${window.limit} OFFSET ${window.offset}`;
  const seek = (id: SQLWrapper) => {
    const past = pastCursor(id, window);
    return past ? sql` AND ${past}` : sql``;
  };
  if (plan === "keywordIndex") {
    const match = ftsQuery(q.searchkeyword ?? "", audienceTokens(caller, q.userId));
    return {
      pageIds: sql`SELECT rowid FROM ads_fts WHERE ads_fts MATCH ${match}${seek(sql`rowid`)} ${paged}`,
      total: sql`SELECT count(*) FROM ads_fts WHERE ads_fts MATCH ${match}`,
    };
  }
  const [first, ...more] = q.searchattributes ?? [];
  const categoryId = q.categoryId;
  const where = and(
    visible,
    first ? attributeMatch(first, categoryId) : undefined,
    q.userId === undefined ? undefined : eq(adAttributes.userId, q.userId),
    ...more.map((a) => sql`${adAttributes.adId} IN (${attributeAdIds(a, categoryId)})`),
  );
  // A key with several values has a row per value: an ad is one match however many of its rows match.
  const matches = sql`SELECT DISTINCT ${adAttributes.adId} FROM ${adAttributes} INNER JOIN ${users} ON ${users.id} = ${adAttributes.userId} WHERE ${where}`;
  return {
    pageIds: sql`${matches}${seek(adAttributes.adId)} ${paged}`,
    total: sql`SELECT count(*) FROM (${matches})`,
  };
}

/** The rows a page reads: how many, and from where (past the `after` id, or after skipping `offset`). */
export interface PageWindow {
  limit: number;
  offset: number;
  descending: boolean;
  after?: number;
}

/**
 * The cursor of the page after one that showed `ids`, when there is one: its number and, where the order
 * seeks by id (`seeks`), the last id shown.
 */
export function nextCursorOf(
  ids: number[],
  page: { position: PagePositionValue; itemsPerPage: number; totalItems: number; descending: boolean },
  seeks: boolean,
): string | undefined {
  const { position, itemsPerPage, totalItems, descending } = page;
  const last = ids.at(-1);
  if (ids.length < itemsPerPage || position.page * itemsPerPage >= totalItems || last === undefined) return undefined;
  return encodeCursor(
    seeks ? { page: position.page + 1, after: last, ...(descending && { descending }) } : { page: position.page + 1 },
  );
}

/** The ids past the cursor's, in the window's direction (an index seeks there); none without a cursor. */
export const pastCursor = (id: SQLWrapper, { after, descending }: PageWindow) =>
  after === undefined ? undefined : descending ? lt(id, after) : gt(id, after);

/**
 * Where the page starts: the cursor's position, or the page `page` names. A cursor's id is only
 * meaningful in the order it was handed out for.
 */
export function pagePosition(q: AdsQueryInput, descending: boolean): PagePositionValue {
  const position = q.cursor ?? { page: q.page };
  if (position.after !== undefined && (!inCreationOrder(q) || (position.descending ?? false) !== descending)) {
    throw DomainError.of("validation_failed", "cursor: was handed out for another order; start again without it");
  }
  return position;
}

/** An order key of a list: its expression and direction. */
export interface OrderKey {
  expression: SQL;
  descending: boolean;
}

/** The order of a list: its keys, then the id ascending (as every plan breaks ties). */
export const orderKeysOf = (order: AdsQueryInput["order"]): OrderKey[] =>
  (order ?? [{ field: "created" as const, descending: false }]).map(({ field, descending }) => ({
    expression: ORDER_EXPRESSIONS[field] as SQL,
    descending,
  }));

/**
 * What a page selects of each ad: its view's columns, or, for a page of ids (`idsOnly`: a part of a list
 * merged from many shards), its id alone (as the `ad` whose id the page reads).
 */
export const pageColumns = (q: AdsQueryInput, idsOnly: boolean) =>
  idsOnly
    ? ({ ad: sql`${ads.id}`.mapWith((id: number) => ({ id })) } as unknown as ReturnType<typeof viewColumns>)
    : viewColumns(q.simple);

/**
 * The `matchList` plan's page: a search visits every match both to count it and to sort it, so the
 * matches are listed once, with their order keys, and the count and the page both come from that list
 * (SQLite materialises a CTE read twice). Each row carries the number of matches as `total`.
 */
export function matchListPage(
  { db }: ServiceContext,
  list: ListConditions & {
    query: AdsQueryInput;
    idsOnly: boolean;
    orderKeys: OrderKey[];
    withCatalogue: <T extends SQLiteSelect>(query: T) => T;
    limit: number;
    offset: number;
  },
) {
  const { visible, filters, orderKeys, withCatalogue } = list;
  const keys = Object.fromEntries(orderKeys.map(({ expression }, i) => [`k${i}`, expression.as(`k${i}`)]));
  const matches = db.$with("matches").as(
    withCatalogue(
      db
        .select({ id: ads.id, ...keys })
        .from(ads)
        .innerJoin(users, eq(users.id, ads.userId))
        .$dynamic(),
    ).where(and(visible, ...filters)),
  );
  // The order keys of the matches or of the page, by their aliases.
  const sorted = (source: object) => {
    const field = (name: string) => (source as Record<string, SQL.Aliased | AnyColumn>)[name] as SQL.Aliased;
    return [...orderKeys.map(({ descending }, i) => directed(field(`k${i}`), descending)), asc(field("id"))];
  };
  const pageIds = db.$with("page_ids").as(
    db
      .select()
      .from(matches)
      .orderBy(...sorted(matches))
      .limit(list.limit)
      .offset(list.offset),
  );
  return db
    .with(matches, pageIds)
    .select({ total: sql<number>`(SELECT count(*) FROM ${matches})`, ...pageColumns(list.query, list.idsOnly) })
    .from(pageIds)
    .innerJoin(ads, eq(ads.id, pageIds.id))
    .orderBy(...sorted(pageIds));
}

/**
 * The joins of categories and groups, made only for the filters that read them (a dynamic query is
 * changed in place by its join methods).
 */
export function catalogueJoins(q: AdsQueryInput) {
  const needsCatalogue = q.groupId !== undefined || Boolean(q.groupDescription) || Boolean(q.categoryDescription);
  return <T extends SQLiteSelect>(query: T): T => {
    if (needsCatalogue) {
      query.leftJoin(categories, eq(categories.id, ads.categoryId)).leftJoin(groups, eq(groups.id, categories.groupId));
    }
    return query;
  };
}
