// An ads page merged from many partitions (each a database of its own): each one's part, and their merge.
import { and, eq, sql } from "drizzle-orm";
import { inList } from "../../db/inList";
import { ads, users } from "../../db/schema";
import { loadCatalogue } from "../catalogue/catalogue";
import { visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { AdsQueryInput } from "./schemas";
import { searchPage } from "./search";
import { inCreationOrder, nextCursorOf, type OrderKey, orderKeysOf, pagePosition } from "./searchPlans";
import { type AdView, assembleViews, type SimpleAdView, viewColumns } from "./views";

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
export function mergedWindow(q: AdsQueryInput) {
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
  const page = await searchPage(ctx, { query: window, idsOnly: true });
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
export function mergedPageOf(
  q: AdsQueryInput,
  shown: { part: number; adId: number }[],
  totalItems: number,
  seeks: boolean,
) {
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
