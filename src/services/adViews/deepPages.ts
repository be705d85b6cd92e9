// Deep pages by number across partitions, found through each partition's samples of its ids.
import { and, eq, gt, lt, type SQL, sql } from "drizzle-orm";
import { ads, users } from "../../db/schema";
import type { ServiceContext } from "../shared/context";
import { mergedPageOf, mergedWindow } from "./mergedPages";
import type { AdsQueryInput } from "./schemas";
import { searchPage } from "./search";
import { conditions, directed } from "./searchFilters";
import { catalogueJoins, choosePlan } from "./searchPlans";

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
    searchPage(ctx, { query: { ...q, page: 1, itemsPerPage: 1, cursor: undefined }, idsOnly: true }),
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
