import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { advanceMove, beginMove, type MoveShards, type MoveState } from "../../src/db/moves";
import { SAVE_EVERY_PAGES } from "../../src/db/moves/budget";
import { PAGE } from "../../src/db/moves/tables";
import { call, defined, eventually } from "../harness/api";
import { seedAds } from "../harness/data";
import { groupOnShard1 } from "../harness/moves";

/**
 * A move that fits an invocation's limits (src/db/moves/budget.ts): a step's copy stops at its budget of
 * D1 queries, and keeps its progress as it goes, so a step cut off mid-way (its invocation ended) loses
 * at most SAVE_EVERY_PAGES pages.
 */

/**
 * `d1`, counting the queries it is sent, as D1's per-invocation limit does: a statement run alone, or a
 * batch (every statement prepared is run alone or in a batch).
 */
function counted(d1: D1Database) {
  const ran = { queries: 0 };
  const database = new Proxy(d1, {
    get: (target, name) => {
      if (name === "batch")
        return (statements: D1PreparedStatement[]) => {
          ran.queries += 1 - statements.length;
          return target.batch(statements);
        };
      if (name === "prepare")
        return (query: string) => {
          ran.queries += 1;
          return target.prepare(query);
        };
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { database, ran };
}

/** `d1`, whose batches after the first `batches` never end: the invocation running it was ended. */
function cutOffAfter(d1: D1Database, batches: number) {
  let left = batches;
  const reached = { cutOff: false };
  const database = new Proxy(d1, {
    get: (target, name) => {
      if (name === "batch")
        return (statements: D1PreparedStatement[]) => {
          if (left === 0) {
            reached.cutOff = true;
            return new Promise(() => {});
          }
          left -= 1;
          return target.batch(statements);
        };
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { database, reached };
}

describe("a move within an invocation's limits", () => {
  it("a step stops at its queries, and keeps its progress as it goes", async () => {
    const { group, internalKey, sellerId } = await groupOnShard1();
    await seedAds(sellerId, 80 * PAGE);
    const shards: MoveShards = { directory: env.DIRECTORY, source: env.DB, target: env.DB_2 };
    const state = async () =>
      (await call("GET", `/clientgroups/${group}/move`, { key: internalKey })).body.data as MoveState;
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    // The first step prepares the shards (once), then copies within its queries.
    defined((await advanceMove(shards, group, { settleMs: 0, budgetMs: 60_000, queries: 40 })).state);
    const before = (await state()).copied;

    // A step of 40 queries, counted on both shards: it stops within them, having copied at most 20 pages.
    const source = counted(env.DB);
    const target = counted(env.DB_2);
    const step = defined(
      (
        await advanceMove({ ...shards, source: source.database, target: target.database }, group, {
          settleMs: 0,
          budgetMs: 60_000,
          queries: 40,
        })
      ).state,
    );
    expect(step.state).toBe("moving");
    expect(step.copied).toBeGreaterThan(before);
    expect(step.copied - before).toBeLessThanOrEqual(20 * PAGE);
    expect(source.ran.queries + target.ran.queries).toBeLessThanOrEqual(40);

    // A step whose invocation is ended mid-copy (its writes never answer): what it copied up to its last
    // save is kept in the directory.
    const cut = cutOffAfter(env.DB_2, SAVE_EVERY_PAGES + 2);
    void advanceMove({ ...shards, target: cut.database }, group, { settleMs: 0, budgetMs: 60_000 });
    await eventually(async () => (cut.reached.cutOff ? true : undefined), "the step's invocation to end");
    expect((await state()).copied).toBeGreaterThan(step.copied);
  });
});
