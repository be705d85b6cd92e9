// Deep pages by number across shards (src/services/adViews/deepPages.ts `sampledDeepPage`): found through each
// shard's sample of its ids, then a few ids past a boundary from each, not every id up to the page.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AdsSample,
  deepPageBoundary,
  mergeDeepPage,
  partPastBoundary,
  SAMPLE_EVERY,
} from "../../src/services/adViews/deepPages";
import type { AdsQueryInput } from "../../src/services/adViews/schemas";
import { call, expectEnvelope, newClient } from "../harness/api";
import { createUser, seedAds } from "../harness/data";

/** A partition's sample as `adsSampleOf` reads it: its ids in the list's order, every SAMPLE_EVERY-th up to `end`. */
const sampleOf = (ids: number[], end: number): AdsSample => ({
  samples: ids.slice(0, end).flatMap((id, at) => ((at + 1) % SAMPLE_EVERY === 0 ? [{ id, place: at + 1 }] : [])),
  totalItems: ids.length,
});

describe("a deep page found through samples", () => {
  it("is the page every partition's ids make, however they interleave", () => {
    fc.assert(
      fc.property(
        // Partitions as runs of consecutive ids (a group's blocks), in any interleaving and any skew.
        fc.array(fc.array(fc.integer({ min: 1, max: 2_000 }), { minLength: 1, maxLength: 6 }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 25 }),
        fc.double({ min: 0, max: 1.05, noNaN: true }),
        (runs, striped, descending, itemsPerPage, depth) => {
          // Run r of partition p holds ids from block r * 4 + p (partitions interleave by blocks), or, striped,
          // every id of partition p is one apart from the others' (they interleave row by row).
          const parts = runs.map((lengths, p) =>
            lengths.flatMap((length, r) =>
              Array.from({ length }, (_, i) => (striped ? ((r * 2_000 + i) * 4 + p) * 4 : (r * 4 + p) * 4_096 + i) + 1),
            ),
          );
          const ordered = (ids: number[]) => [...ids].sort((a, b) => (descending ? b - a : a - b));
          const all = ordered(parts.flat());
          const page = Math.max(1, Math.ceil((depth * all.length) / itemsPerPage));
          const q = { page, itemsPerPage, order: [{ field: "created", descending }] } as AdsQueryInput;
          const sampled = parts.map((ids) => sampleOf(ordered(ids), page * itemsPerPage));
          const found = deepPageBoundary(q, sampled);
          if (!found) return;
          // What each partition reads from its sample (adsAfterBoundary's query), then the merge.
          const read = parts.map((ids, at) => {
            const sample = found.from[at];
            const mine = ordered(ids);
            const start = sample ? mine.indexOf(sample.id) + 1 : 0;
            return partPastBoundary(
              mine.slice(start, start + SAMPLE_EVERY - 1 + found.after),
              { ...found, sample },
              descending,
            );
          });
          const merged = mergeDeepPage(q, sampled, read);
          expect(merged.shown.map((ad) => ad.adId)).toEqual(all.slice((page - 1) * itemsPerPage, page * itemsPerPage));
          expect(merged.totalItems).toBe(all.length);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("holds where a partition has one row short of a sample before the boundary, at every page", () => {
    // Partition 0: 500 even ids, its one sample the last; partition 1: 499 odd ids below it, then 500 above.
    const parts = [
      Array.from({ length: 500 }, (_, i) => 2 * (i + 1)),
      [...Array.from({ length: 499 }, (_, i) => 2 * i + 1), ...Array.from({ length: 500 }, (_, i) => 1_001 + 2 * i)],
    ];
    const all = parts.flat().sort((a, b) => a - b);
    let found = 0;
    for (let page = 1; page <= all.length + 1; page += 1) {
      const q = { page, itemsPerPage: 1 } as AdsQueryInput;
      const sampled = parts.map((ids) => sampleOf(ids, page));
      const boundary = deepPageBoundary(q, sampled);
      if (!boundary) continue;
      found += 1;
      const read = parts.map((ids, at) => {
        const sample = boundary.from[at];
        const start = sample ? ids.indexOf(sample.id) + 1 : 0;
        return partPastBoundary(
          ids.slice(start, start + SAMPLE_EVERY - 1 + boundary.after),
          { ...boundary, sample },
          false,
        );
      });
      expect(
        mergeDeepPage(q, sampled, read).shown.map((ad) => ad.adId),
        `page ${page}`,
      ).toEqual(all.slice(page - 1, page));
    }
    expect(found).toBeGreaterThan(0);
  });

  it("is found for a page far past SAMPLE_EVERY rows of two partitions", () => {
    const parts = [1, 2].map((p) =>
      sampleOf(
        Array.from({ length: 3_000 }, (_, i) => p * 1_000_000 + i + 1),
        4_000,
      ),
    );
    expect(deepPageBoundary({ page: 160, itemsPerPage: 25 } as AdsQueryInput, parts)).toBeDefined();
  });
});

describe("an internal client's deep page of every shard's ads", () => {
  it("is the page the cursor reaches, in either order, across groups interleaved over two shards", async () => {
    const internal = await newClient({ internal: true, shard: 1 });
    // Four groups, alternately on each shard, each its own blocks: the ids interleave by group.
    for (const shard of [1, 2, 1, 2]) {
      const partner = await newClient({ partner: true, shard });
      await seedAds((await createUser(partner.key)).userId, 700, shard);
    }
    for (const descending of [false, true]) {
      const order = `order[0][field]=created&order[0][descending]=${descending}`;
      // Every id, in order, through the cursor (which reads each shard's next page past the last id).
      const every: number[] = [];
      let cursor: string | undefined;
      do {
        const answer = await call(
          "GET",
          `/ads/?simple=1&itemsPerPage=500&${order}${cursor ? `&cursor=${cursor}` : ""}`,
          {
            key: internal.key,
          },
        );
        expectEnvelope(answer, 200);
        every.push(...(answer.body.data as { adId: number }[]).map((ad) => ad.adId));
        cursor = answer.body.nextCursor as string | undefined;
      } while (cursor);
      expect(every.length).toBeGreaterThanOrEqual(2_800);

      for (const page of [81, 97, 110, Math.ceil(every.length / 25), Math.ceil(every.length / 25) + 3]) {
        const answer = await call("GET", `/ads/?simple=1&itemsPerPage=25&page=${page}&${order}`, { key: internal.key });
        expectEnvelope(answer, 200);
        expect(
          (answer.body.data as { adId: number }[]).map((ad) => ad.adId),
          `page ${page}`,
        ).toEqual(every.slice((page - 1) * 25, page * 25));
        expect(answer.body.totalItems).toBe(every.length);
        // Its cursor goes on where it ended.
        const next = answer.body.nextCursor as string | undefined;
        if (next) {
          const after = await call("GET", `/ads/?simple=1&itemsPerPage=25&${order}&cursor=${next}`, {
            key: internal.key,
          });
          expect((after.body.data as { adId: number }[]).map((ad) => ad.adId)).toEqual(
            every.slice(page * 25, (page + 1) * 25),
          );
        }
      }
    }
  }, 120_000);
});
