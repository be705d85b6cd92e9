// GET /ads/: one page of a list of ads, by the plan its filters and order choose (searchPlans.ts).
import { and, asc, count, eq, inArray, sql } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { ads, users } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import type { ServiceContext } from "../shared/context";
import type { AdsQueryInput } from "./schemas";
import { isTallied, tallyCount } from "./searchCounts";
import { conditions, directed } from "./searchFilters";
import {
  catalogueJoins,
  choosePlan,
  inCreationOrder,
  indexedIds,
  matchListPage,
  nextCursorOf,
  orderKeysOf,
  type PageWindow,
  pageColumns,
  pagePosition,
  pastCursor,
} from "./searchPlans";
import { type AdView, assembleViews, type SimpleAdView, type ViewRow } from "./views";

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
  searchPage(ctx, { query: q, idsOnly: false }) as Promise<Page<AdView | SimpleAdView>>;

/** The ads list's page (`searchAds`), or only the ids of its ads (`idsOnly`), with the same count and cursor. */
export async function searchPage(
  ctx: ServiceContext,
  input: { query: AdsQueryInput; idsOnly: boolean },
): Promise<Page<AdView | SimpleAdView | { adId: number }>> {
  const { query: q, idsOnly } = input;
  const { db, caller } = ctx;
  const itemsPerPage = q.itemsPerPage ?? 25;
  const descending = q.order?.[0]?.descending ?? false;
  const position = pagePosition(q, descending);
  const { visible, filters } = conditions(caller, q);
  const orderKeys = orderKeysOf(q.order);
  const withCatalogue = catalogueJoins(q);
  const countQuery = isTallied(q)
    ? tallyCount(ctx, { query: q, visible })
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
      matchListPage(ctx, {
        query: q,
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
