import { type AnyColumn, and, asc, count, eq, gt, inArray, lt, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { SQLiteSelect } from "drizzle-orm/sqlite-core";
import { namedBatch } from "../../db/client";
import { inList } from "../../db/inList";
import {
  adAttributes,
  ads,
  adTallies,
  categories,
  clientAdTallies,
  folders,
  groups,
  NO_TALLY_KEY,
  users,
} from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { type Caller, clientIdOf, isInternal, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { type AdsQueryInput, encodeCursor, type PagePositionValue } from "./schemas";
import {
  attributeAdIds,
  attributeMatch,
  audienceTokens,
  conditions,
  directed,
  ftsQuery,
  type ListConditions,
  ORDER_EXPRESSIONS,
} from "./searchFilters";
import { type AdView, assembleViews, type SimpleAdView, type ViewRow, viewColumns } from "./views";

const PAGING_FIELDS = new Set(["useCache", "page", "cursor", "itemsPerPage", "simple", "order"]);

/** Whether the query filters by nothing but `fields`. */
const filtersWithin = (q: AdsQueryInput, fields: string[]) =>
  Object.entries(q).every(
    ([field, value]) => value === undefined || PAGING_FIELDS.has(field) || fields.includes(field),
  );

/** Whether the query orders by creation (which is id order) alone. */
const inCreationOrder = (q: AdsQueryInput) => (q.order ?? []).every(({ field }) => field === "created");

/** Whether the query filters by nothing but `fields` and orders by creation. */
const filtersOnly = (q: AdsQueryInput, fields: string[]) => filtersWithin(q, fields) && inCreationOrder(q);

/**
 * Whether the list's count is a sum of tallies (`ad_tallies`, `client_ad_tallies`): it filters by nothing
 * but the tallied columns, and not by the tallies' stand-in for "none".
 */
const isTallied = (q: AdsQueryInput) =>
  filtersWithin(q, ["userId", "status", "type", "folderId", "categoryId"]) &&
  q.folderId !== NO_TALLY_KEY &&
  q.categoryId !== NO_TALLY_KEY;

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
function indexedIds(
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

/**
 * The number of ads a tallied list matches, summed from the few tally rows its filters select. Across
 * users: the client's rows (an internal client's: every client's). With `userId`, or a folder (which
 * belongs to one user): that user's rows, if the caller may see the user (the check reads that user only).
 */
function tallyCount({ db, caller }: ServiceContext, q: AdsQueryInput, visible?: SQL) {
  const sum = (column: AnyColumn) => sql<number>`coalesce(sum(${column}), 0)`;
  const optional = <T>(value: T | undefined, condition: (v: T) => SQL) =>
    value === undefined ? undefined : condition(value);
  if (q.userId === undefined && q.folderId === undefined) {
    return db
      .select({ n: sum(clientAdTallies.n) })
      .from(clientAdTallies)
      .where(
        and(
          isInternal(caller) ? undefined : eq(clientAdTallies.clientId, clientIdOf(caller)),
          optional(q.status, (v) => eq(clientAdTallies.status, v)),
          optional(q.type, (v) => eq(clientAdTallies.type, v)),
          optional(q.categoryId, (v) => eq(clientAdTallies.categoryId, v)),
        ),
      );
  }
  const owner =
    q.userId !== undefined
      ? eq(users.id, q.userId)
      : inArray(
          users.id,
          db
            .select({ id: folders.userId })
            .from(folders)
            .where(eq(folders.id, q.folderId ?? 0)),
        );
  const visibleOwner = db.select({ id: users.id }).from(users).where(and(owner, visible));
  return db
    .select({ n: sum(adTallies.n) })
    .from(adTallies)
    .where(
      and(
        inArray(adTallies.userId, visibleOwner),
        optional(q.userId, (v) => eq(adTallies.userId, v)),
        optional(q.status, (v) => eq(adTallies.status, v)),
        optional(q.type, (v) => eq(adTallies.type, v)),
        optional(q.folderId, (v) => eq(adTallies.folderId, v)),
        optional(q.categoryId, (v) => eq(adTallies.categoryId, v)),
      ),
    );
}

/** The rows a page reads: how many, and from where (past the `after` id, or after skipping `offset`). */
interface PageWindow {
  limit: number;
  offset: number;
  descending: boolean;
  after?: number;
}

/**
 * The cursor of the page after one that showed `ids`, when there is one: its number and, where the order
 * seeks by id (`seeks`), the last id shown.
 */
function nextCursorOf(
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
const pastCursor = (id: SQLWrapper, { after, descending }: PageWindow) =>
  after === undefined ? undefined : descending ? lt(id, after) : gt(id, after);

/**
 * Where the page starts: the cursor's position, or the page `page` names. A cursor's id is only
 * meaningful in the order it was handed out for.
 */
function pagePosition(q: AdsQueryInput, descending: boolean): PagePositionValue {
  const position = q.cursor ?? { page: q.page };
  if (position.after !== undefined && (!inCreationOrder(q) || (position.descending ?? false) !== descending)) {
    throw DomainError.of("validation_failed", "cursor: was handed out for another order; start again without it");
  }
  return position;
}

/** An order key of a list: its expression and direction. */
interface OrderKey {
  expression: SQL;
  descending: boolean;
}

/** The order of a list: its keys, then the id ascending (as every plan breaks ties). */
const orderKeysOf = (order: AdsQueryInput["order"]): OrderKey[] =>
  (order ?? [{ field: "created" as const, descending: false }]).map(({ field, descending }) => ({
    expression: ORDER_EXPRESSIONS[field] as SQL,
    descending,
  }));

/**
 * The `matchList` plan's page: a search visits every match both to count it and to sort it, so the
 * matches are listed once, with their order keys, and the count and the page both come from that list
 * (SQLite materialises a CTE read twice). Each row carries the number of matches as `total`.
 */
/**
 * What a page selects of each ad: its view's columns, or, for a page of ids (`idsOnly`: a part of a list
 * merged from many shards), its id alone (as the `ad` whose id the page reads).
 */
const pageColumns = (q: AdsQueryInput, idsOnly: boolean) =>
  idsOnly
    ? ({ ad: sql`${ads.id}`.mapWith((id: number) => ({ id })) } as unknown as ReturnType<typeof viewColumns>)
    : viewColumns(q.simple);

function matchListPage(
  { db }: ServiceContext,
  q: AdsQueryInput,
  list: ListConditions & {
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
    .select({ total: sql<number>`(SELECT count(*) FROM ${matches})`, ...pageColumns(q, list.idsOnly) })
    .from(pageIds)
    .innerJoin(ads, eq(ads.id, pageIds.id))
    .orderBy(...sorted(pageIds));
}

/**
 * GET /ads/ in one D1 round trip, by the plan `choosePlan` names: the count and the page, whose rows carry
 * their details as nested rows, go in one batch, and the page query runs once. The count is a sum of tallies when the
 * list filters by tallied columns only (`tallyCount`); otherwise it reaches the users table through an
 * `IN` on its primary key, so it stays on the ads indexes. The page keeps the join, which lets SQLite walk
 * the order index and stop at the page (written as the count is, it sorts every match). A keyword or
 * attribute search is one statement that lists its matches once for both. In the order by creation a page
 * after the first seeks past the id its cursor carries, so it reads what it shows however deep it is;
 * other orders skip rows (`pagePosition` refuses a cursor's id in them).
 */
export const searchAds = (ctx: ServiceContext, q: AdsQueryInput) =>
  searchPage(ctx, q, false) as Promise<Page<AdView | SimpleAdView>>;

/**
 * The joins of categories and groups, made only for the filters that read them (a dynamic query is
 * changed in place by its join methods).
 */
function catalogueJoins(q: AdsQueryInput) {
  const needsCatalogue = q.groupId !== undefined || Boolean(q.groupDescription) || Boolean(q.categoryDescription);
  return <T extends SQLiteSelect>(query: T): T => {
    if (needsCatalogue) {
      query.leftJoin(categories, eq(categories.id, ads.categoryId)).leftJoin(groups, eq(groups.id, categories.groupId));
    }
    return query;
  };
}

/** The ads list's page (`searchAds`), or only the ids of its ads (`idsOnly`), with the same count and cursor. */
async function searchPage(
  ctx: ServiceContext,
  q: AdsQueryInput,
  idsOnly: boolean,
): Promise<Page<AdView | SimpleAdView | { adId: number }>> {
  const { db, caller } = ctx;
  const itemsPerPage = q.itemsPerPage ?? 25;
  const descending = q.order?.[0]?.descending ?? false;
  const position = pagePosition(q, descending);
  const { visible, filters } = conditions(caller, q);
  const orderKeys = orderKeysOf(q.order);
  const withCatalogue = catalogueJoins(q);
  const countQuery = isTallied(q)
    ? tallyCount(ctx, q, visible)
    : withCatalogue(db.select({ n: count() }).from(ads).$dynamic()).where(
        and(inArray(ads.userId, db.select({ id: users.id }).from(users).where(visible)), ...filters),
      );
  const answer = (catalogue: Catalogue, rows: ViewRow[], totalItems: number, seeks: boolean) => {
    return {
      items: idsOnly
        ? rows.map((row) => ({ adId: row.ad.id }))
        : assembleViews(catalogue, rows, q.simple, ctx.mediaBase),
      totalItems,
      page: position.page,
      itemsPerPage,
      nextCursor: nextCursorOf(
        rows.map((row) => row.ad.id),
        { position, itemsPerPage, totalItems, descending },
        seeks,
      ),
    };
  };

  // An empty page has no row to carry the count: on the first page there are no matches; past the last
  // page the count is read on its own (a second round trip, only then).
  const totalOf = async (rows: { total: number }[]) =>
    rows[0]?.total ?? (position.page === 1 ? 0 : ((await countQuery)[0]?.n ?? 0));

  // A position with an id seeks past it (only in the order by creation); one without skips the pages before.
  const skipped = (position.page - 1) * itemsPerPage;
  const window: PageWindow =
    position.after === undefined
      ? { limit: itemsPerPage, offset: skipped, descending }
      : { limit: itemsPerPage, offset: 0, descending, after: position.after };

  const plan = choosePlan(q);
  if (plan === "keywordIndex" || plan === "attributeIndex") {
    const indexed = indexedIds(plan, caller, q, visible, window);
    const [catalogue, rows] = await Promise.all([
      loadCatalogue(db),
      db
        .select({ total: sql<number>`(${indexed.total})`, ...pageColumns(q, idsOnly) })
        .from(ads)
        .where(sql`${ads.id} IN (${indexed.pageIds})`)
        .orderBy(directed(ads.id, descending)),
    ]);
    return answer(catalogue, rows, await totalOf(rows), true);
  }

  if (plan === "matchList") {
    const [catalogue, rows] = await Promise.all([
      loadCatalogue(db),
      matchListPage(ctx, q, {
        visible,
        filters,
        orderKeys,
        withCatalogue,
        limit: itemsPerPage,
        offset: skipped,
        idsOnly,
      }),
    ]);
    return answer(catalogue, rows, await totalOf(rows), false);
  }

  // The `filteredPage` plan: the count and the page in one batch.
  const pageQuery = withCatalogue(
    db.select(pageColumns(q, idsOnly)).from(ads).innerJoin(users, eq(users.id, ads.userId)).$dynamic(),
  )
    .where(and(visible, ...filters, pastCursor(ads.id, window)))
    .orderBy(...orderKeys.map(({ expression, descending }) => directed(expression, descending)), asc(ads.id))
    .limit(window.limit)
    .offset(window.offset);
  const [catalogue, { counts, rows }] = await Promise.all([
    loadCatalogue(db),
    namedBatch(db, { counts: countQuery, rows: pageQuery }),
  ]);
  const [counted] = counts;
  return answer(catalogue, rows, counted?.n ?? 0, inCreationOrder(q));
}

/** Compares two values of one order key as SQLite does: NULL first, text without case (`COLLATE NOCASE`). */
function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === "string" && typeof b === "string") {
    const [x, y] = [a.toLowerCase(), b.toLowerCase()];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return Number(a) - Number(b);
}

/** One partition's part of a merged page (`adsPartOf`): its ads' ids in order, their order values, its count. */
export interface AdsPart {
  adIds: number[];
  values: Map<number, unknown[]>;
  totalItems: number;
}

/** The window of a merged page: every row up to the page's end, or, seeking by id, the next page past it. */
function mergedWindow(q: AdsQueryInput) {
  const itemsPerPage = q.itemsPerPage ?? 25;
  const descending = q.order?.[0]?.descending ?? false;
  const position = pagePosition(q, descending);
  const window: AdsQueryInput =
    position.after === undefined
      ? { ...q, cursor: undefined, page: 1, itemsPerPage: position.page * itemsPerPage }
      : { ...q, cursor: { page: 1, after: position.after, descending }, itemsPerPage };
  return { window, position, itemsPerPage, descending, seeks: inCreationOrder(q) };
}

/**
 * One partition's part of an ads page merged from many (each partition a database of its own): the ids
 * of its ads up to the page's end (or, in the order by creation with a cursor's id, of its next page past
 * that id), no views, with each ad's order values as the list's query computes them.
 */
export async function adsPartOf(ctx: ServiceContext, q: AdsQueryInput): Promise<AdsPart> {
  const { window, seeks } = mergedWindow(q);
  const page = await searchPage(ctx, window, true);
  const adIds = page.items.map((item) => item.adId);
  const values = seeks || adIds.length === 0 ? [] : await orderValues(ctx, adIds, orderKeysOf(q.order));
  return { adIds, values: new Map(values.map((row) => [row.id, row.values])), totalItems: page.totalItems };
}

/**
 * The ads page merged from the partitions' parts, in the list's order (ties by id, as every plan breaks
 * them), with the total their sum: its ads as the partition (by its place in `parts`) and id to show, and
 * its cursor, which names the page, and the last id where the order seeks by id.
 */
export function mergeAdsParts(q: AdsQueryInput, parts: AdsPart[]) {
  const { position, itemsPerPage, descending, seeks } = mergedWindow(q);
  const keys = seeks ? [{ descending }] : orderKeysOf(q.order);
  const ranked = parts.flatMap(({ adIds, values }, part) =>
    adIds.map((adId) => ({ part, adId, values: values.get(adId) ?? [adId] })),
  );
  ranked.sort((a, b) => {
    for (const [at, key] of keys.entries()) {
      const order = compareValues(a.values[at], b.values[at]);
      if (order !== 0) return key.descending ? -order : order;
    }
    return a.adId - b.adId;
  });
  const skipped = position.after === undefined ? (position.page - 1) * itemsPerPage : 0;
  const shown = ranked.slice(skipped, skipped + itemsPerPage).map(({ part, adId }) => ({ part, adId }));
  return mergedPageOf(
    q,
    shown,
    parts.reduce((sum, part) => sum + part.totalItems, 0),
    seeks,
  );
}

/** A page merged from many partitions: the ads it shows (by partition), the total, and its cursor. */
function mergedPageOf(q: AdsQueryInput, shown: { part: number; adId: number }[], totalItems: number, seeks: boolean) {
  const { position, itemsPerPage, descending } = mergedWindow(q);
  return {
    shown,
    totalItems,
    page: position.page,
    itemsPerPage,
    nextCursor: nextCursorOf(
      shown.map(({ adId }) => adId),
      { position, itemsPerPage, totalItems, descending },
      seeks,
    ),
  };
}

/**
 * Deep pages by number, merged from many partitions. Reading every id up to the page from each partition
 * costs the Worker the whole depth (180,000 ids from each of two shards for a page 90% into 200,000 ads).
 * Instead: each partition samples its ids at every SAMPLE_EVERY-th place up to the page's end (`adsSampleOf`:
 * SQLite walks the index, the Worker gets one id in SAMPLE_EVERY); the samples name an id `boundary` with at
 * most the page's skipped rows at or before it (`deepPageBoundary`); then each partition reads on from its
 * latest sample before it, fewer than SAMPLE_EVERY rows to the boundary (which it counts) and the few
 * after it (`adsAfterBoundary`), and the page is their merge: exact, in two round trips, whatever the
 * depth and however the ids spread over the partitions.
 */
export const SAMPLE_EVERY = 500;

/** A partition's sample: each id at a SAMPLE_EVERY-th place of its list (places from 1), in the list's order, and its count. */
export interface AdsSample {
  samples: { id: number; place: number }[];
  totalItems: number;
}

/** Whether a page merged from many partitions is deep enough, and plain enough, to be found by samples. */
export function sampledDeepPage(q: AdsQueryInput): boolean {
  const { position, itemsPerPage, seeks } = mergedWindow(q);
  return (
    seeks &&
    position.after === undefined &&
    choosePlan(q) === "filteredPage" &&
    (position.page - 1) * itemsPerPage >= 4 * SAMPLE_EVERY
  );
}

/** The partition's rows of the list, ids only, in id order, up to `limit` (the filtered-page plan's query). */
function listIds(ctx: ServiceContext, q: AdsQueryInput, descending: boolean, where: SQL | undefined, limit: number) {
  const { visible, filters } = conditions(ctx.caller, q);
  return catalogueJoins(q)(
    ctx.db.select({ id: ads.id }).from(ads).innerJoin(users, eq(users.id, ads.userId)).$dynamic(),
  )
    .where(and(visible, ...filters, where))
    .orderBy(directed(ads.id, descending))
    .limit(limit);
}

/**
 * One partition's sample for a deep page (`sampledDeepPage`): its ids at every SAMPLE_EVERY-th place up to
 * the page's end, each found by a hop of SAMPLE_EVERY rows along the order index from the one before (a
 * recursive query: SQLite steps past each row once, and numbers nothing; a window function over the same
 * rows cost it six times as much).
 */
export async function adsSampleOf(ctx: ServiceContext, q: AdsQueryInput): Promise<AdsSample> {
  const { position, itemsPerPage, descending } = mergedWindow(q);
  const hop = (from: SQL | undefined) =>
    listIds(ctx, q, descending, from && (descending ? lt(ads.id, from) : gt(ads.id, from)), 1).offset(SAMPLE_EVERY - 1);
  const [samples, { totalItems }] = await Promise.all([
    ctx.db.all<{ id: number; place: number }>(
      sql`WITH RECURSIVE hops(id, place) AS (SELECT (${hop(undefined)}), ${SAMPLE_EVERY}
        UNION ALL SELECT (${hop(sql`hops.id`)}), place + ${SAMPLE_EVERY} FROM hops
        WHERE hops.id IS NOT NULL AND place + ${SAMPLE_EVERY} <= ${position.page * itemsPerPage})
      SELECT id, place FROM hops WHERE id IS NOT NULL`,
    ),
    // The list's count, as its first page reads it.
    searchPage(ctx, { ...q, page: 1, itemsPerPage: 1, cursor: undefined }, true),
  ]);
  return { samples, totalItems };
}

/**
 * The latest sampled id (in the list's order) that at most the page's skipped rows of all partitions can
 * be at or before, and how many ids each partition reads after it for the page; undefined when no sample
 * is that early (the page is then read as any other). A partition's rows at or before an id are at least
 * the place of its latest sample at or before it, and fewer than that place plus SAMPLE_EVERY (a row at
 * that place would have been sampled, or lies past the page's end, which no sampled id does), and its count.
 */
export function deepPageBoundary(q: AdsQueryInput, parts: AdsSample[]): DeepPageBoundary | undefined {
  const { position, itemsPerPage, descending } = mergedWindow(q);
  const skipped = (position.page - 1) * itemsPerPage;
  // Every partition's samples in the list's order: walking them, each partition's latest sample at or
  // before the candidate only moves on, and the bound on the rows before it only grows, so the best
  // candidate is the last one within it.
  const samples = parts
    .flatMap((part, at) => part.samples.map((sample) => ({ ...sample, at })))
    .sort((a, b) => (descending ? b.id - a.id : a.id - b.id));
  const from: DeepPageBoundary["from"] = parts.map(() => undefined);
  const most = (at: number) => Math.min((from[at]?.place ?? 0) + SAMPLE_EVERY - 1, parts[at]?.totalItems ?? 0);
  let mostBefore = parts.reduce((sum, _, at) => sum + most(at), 0);
  let known = 0;
  let best: DeepPageBoundary | undefined;
  for (const { id, place, at } of samples) {
    mostBefore -= most(at);
    known += place - (from[at]?.place ?? 0);
    from[at] = { id, place };
    mostBefore += most(at);
    if (mostBefore > skipped) break;
    best = { boundary: id, after: position.page * itemsPerPage - known, from: [...from] };
  }
  return best;
}

/**
 * A deep page's boundary: an id, how many ids past it each partition reads, and each partition's latest
 * sample at or before it (whence it reads: fewer than SAMPLE_EVERY of its rows lie between the two).
 */
export interface DeepPageBoundary {
  boundary: number;
  after: number;
  from: ({ id: number; place: number } | undefined)[];
}

/**
 * One partition's part of a deep page: its rows at or before the boundary, counted (its sample's place and
 * the rows from that sample to the boundary), and its next `after` ids, read in one seek from its sample.
 */
export async function adsAfterBoundary(
  ctx: ServiceContext,
  input: { query: AdsQueryInput; boundary: DeepPageBoundary; part: number },
): Promise<{ adIds: number[]; atOrBefore: number }> {
  const {
    query: q,
    boundary: { boundary, after, from },
    part,
  } = input;
  const { descending } = mergedWindow(q);
  const sample = from[part];
  const past = (id: number) => (descending ? lt(ads.id, id) : gt(ads.id, id));
  const rows = await listIds(ctx, q, descending, sample && past(sample.id), SAMPLE_EVERY - 1 + after);
  return partPastBoundary(
    rows.map((row) => row.id),
    { boundary, after, sample },
    descending,
  );
}

/**
 * A partition's part of a deep page from the ids it has past its sample (in the list's order, at least
 * SAMPLE_EVERY − 1 + `after` of them or all): its rows at or before the boundary and its next `after` ids.
 */
export function partPastBoundary(
  ids: number[],
  { boundary, after, sample }: { boundary: number; after: number; sample: { place: number } | undefined },
  descending: boolean,
): { adIds: number[]; atOrBefore: number } {
  const beyond = ids.filter((id) => (descending ? id < boundary : id > boundary));
  return { adIds: beyond.slice(0, after), atOrBefore: (sample?.place ?? 0) + ids.length - beyond.length };
}

/** The deep page merged from each partition's part past the boundary, as `mergeAdsParts` answers a page. */
export function mergeDeepPage(
  q: AdsQueryInput,
  sampled: AdsSample[],
  parts: { adIds: number[]; atOrBefore: number }[],
) {
  const { position, itemsPerPage, descending } = mergedWindow(q);
  const skip = (position.page - 1) * itemsPerPage - parts.reduce((sum, part) => sum + part.atOrBefore, 0);
  const ranked = parts
    .flatMap(({ adIds }, part) => adIds.map((adId) => ({ part, adId })))
    .sort((a, b) => (descending ? b.adId - a.adId : a.adId - b.adId));
  return mergedPageOf(
    q,
    ranked.slice(skip, skip + itemsPerPage),
    sampled.reduce((sum, part) => sum + part.totalItems, 0),
    true,
  );
}

/**
 * The views of the ads a merged page shows of one partition, by id (`simple` as the list asks): one
 * statement, without the list's count or filters, which its part (`adsPartOf`) applied.
 */
export async function adViewsOf(ctx: ServiceContext, input: { simple: boolean; adIds: number[] }) {
  const { simple, adIds } = input;
  if (adIds.length === 0) return new Map<number, AdView | SimpleAdView>();
  const [catalogue, rows] = await Promise.all([
    loadCatalogue(ctx.db),
    ctx.db
      .select(viewColumns(simple))
      .from(ads)
      .innerJoin(users, eq(users.id, ads.userId))
      .where(and(inList(ads.id, adIds), visibleUsers(ctx.caller))),
  ]);
  return new Map(assembleViews(catalogue, rows, simple, ctx.mediaBase).map((view) => [view.adId, view]));
}

/** The order values of the ads, as the list's query computes them. */
async function orderValues(ctx: ServiceContext, adIds: number[], keys: OrderKey[]) {
  const rows = await ctx.db
    .select({
      id: ads.id,
      ...Object.fromEntries(keys.map((key, at) => [`k${at}`, sql<unknown>`${key.expression}`])),
    })
    .from(ads)
    .where(inList(ads.id, adIds));
  return rows.map((row) => ({
    id: row.id,
    values: keys.map((_, at) => (row as Record<string, unknown>)[`k${at}`]),
  }));
}
