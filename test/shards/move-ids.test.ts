import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, expectEnvelope, newClient } from "../harness/api";
import { createAd, createUser, PAID_CATEGORY } from "../harness/data";
import { budgetNotice, confirmed, groupOnShard1, moved, switchedLongAgo } from "../harness/moves";

/**
 * Ids and event cursors across moves (src/db/moves/): an id deleted at the top of its block is never
 * issued again on the new shard, an event id never twice on a shard, and a cursor reads on past any
 * number of moves. It reads a shard's newest event, so it runs in a runtime of its own (vitest.config.ts).
 */

describe("ids and event cursors across moves", () => {
  it("never issues an id again on the new shard that the old one deleted at the top of its block", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    const { adId: deleted } = await createAd(key, sellerId, { categoryId: PAID_CATEGORY });
    expectEnvelope(await call("DELETE", `/ads/${deleted}`, { key }), 200);
    await moved(internalKey, group, 2);
    const { adId: next } = await createAd(key, sellerId, { categoryId: PAID_CATEGORY });
    expect(next, "the id after the deleted one").toBeGreaterThan(deleted);
  }, 120_000);

  it("never hands an event id out twice on a shard: a cursor at the newest event stays valid once a move takes it away", async () => {
    const reader = await newClient({ internal: true, shard: 1 });
    const { group, internalKey, sellerId, clientId } = await groupOnShard1();
    // The moving group's event is shard 1's newest.
    await budgetNotice(sellerId);
    const newest = await env.DB.prepare("SELECT id, client_id AS clientId FROM events ORDER BY id DESC LIMIT 1").first<{
      id: number;
      clientId: number;
    }>();
    expect(newest?.clientId).toBe(clientId);
    const latest = await call("GET", "/events/?after=latest&shard=1", { key: reader.key });
    expectEnvelope(latest, 200);
    const cursor = latest.body.cursor as number;
    expect(cursor).toBe(newest?.id);
    await moved(internalKey, group, 2);
    await switchedLongAgo(group);
    await confirmed(internalKey, group);
    const after = await call("GET", `/events/?after=${cursor}&shard=1`, { key: reader.key });
    expectEnvelope(after, 200);
    expect(after.body.data).toEqual([]);
    // The next event on shard 1 comes after the cursor, and the reader sees it.
    const other = await newClient({ partner: true, shard: 1 });
    const { userId } = await createUser(other.key);
    await budgetNotice(userId);
    const next = await call("GET", `/events/?after=${cursor}&shard=1`, { key: reader.key });
    const ids = (next.body.data as { eventId: number; userId: number }[]).map((event) => event.userId);
    expect(ids).toContain(userId);
  }, 120_000);

  it("reads on from a cursor handed out before any number of moves: exactly the events after it, once", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    const limits = async (after: number) => {
      const feed = await call("GET", `/events/?after=${after}&type=wallet.below_limit`, { key });
      expectEnvelope(feed, 200);
      return {
        cursor: feed.body.cursor as number,
        limits: (feed.body.data as { data: { limit: number } }[]).map((event) => event.data.limit),
      };
    };
    await budgetNotice(sellerId, 1, 1_000_001);
    const era0 = (await limits(0)).cursor;
    await budgetNotice(sellerId, 1, 1_000_002);
    await moved(internalKey, group, 2);
    const era1 = await limits(era0);
    expect(era1.limits, "after a move").toEqual([1_000_002]);
    await budgetNotice(sellerId, 2, 1_000_003);
    await switchedLongAgo(group);
    await moved(internalKey, group, 1);
    await budgetNotice(sellerId, 1, 1_000_004);
    expect((await limits(era0)).limits, "from before two moves").toEqual([1_000_002, 1_000_003, 1_000_004]);
    expect((await limits(era1.cursor)).limits, "from between them").toEqual([1_000_003, 1_000_004]);
    expect((await limits(0)).limits, "from the start").toEqual([1_000_001, 1_000_002, 1_000_003, 1_000_004]);
  }, 120_000);
});
