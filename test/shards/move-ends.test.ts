import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { advanceMove, beginMove, dropGroup, groupHoldings, type MoveShards, type MoveState } from "../../src/db/moves";
import { sendNotifications } from "../../src/services/scheduling";
import type { NotificationSender } from "../../src/services/scheduling/notices";
import { jobContext } from "../../src/services/shared";
import { call, defined, expectEnvelope, expectError, newClient } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { adBody, createAd, createUser, PAID_CATEGORY, seedAds } from "../harness/data";
import { budgetNotice, confirmed, failingAt, groupOnShard1, moved, switchedLongAgo } from "../harness/moves";

/**
 * Every move ends (src/db/moves/): abandoned at any step before its switch, refused while another is
 * under way, reversed by a move back; and the shards' scheduled work stays whole across it (ids and event
 * cursors: move-ids.test.ts).
 */

const shards: MoveShards = { directory: env.DIRECTORY, source: env.DB, target: env.DB_2 };

const moveState = async (key: string, group: number) => call("GET", `/clientgroups/${group}/move`, { key });
const abandon = (key: string, group: number) => call("DELETE", `/clientgroups/${group}/move`, { key });
const nothingOf = (holdings: Record<string, number>) => Object.values(holdings).every((n) => n === 0);
const moveTriggers = async (d1: D1Database, group: number) =>
  (await d1.prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'move_${group}_%'`).all())
    .results;
const directoryRow = (group: number) =>
  env.DIRECTORY.prepare(
    "SELECT shard, moving_to AS movingTo, move_progress AS progress FROM client_groups WHERE id = ?",
  )
    .bind(group)
    .first<{ shard: number; movingTo: number | null; progress: string | null }>();

describe("every move ends", () => {
  it("is abandoned at any step before its switch: during the copy, and after a runner died fenced in the switch", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    await seedAds(sellerId, 700, 1);
    const atStart = await groupHoldings(env.DB, group);
    // During the copy: a step has copied a page.
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    const step = defined((await advanceMove(shards, group, { settleMs: 0, budgetMs: 0 })).state);
    expect(step.copied).toBeGreaterThan(0);
    const abandoned = await abandon(internalKey, group);
    expectEnvelope(abandoned, 200);
    expect(abandoned.body.data).toMatchObject({ groupId: group, shard: 1 });
    expect(abandoned.body.data.dropped).toBeGreaterThanOrEqual(step.copied);
    expect(nothingOf(await groupHoldings(env.DB_2, group)), "the copy is dropped").toBe(true);
    expect(await groupHoldings(env.DB, group)).toEqual(atStart);
    expect(await moveTriggers(env.DB, group)).toEqual([]);
    expect(await moveTriggers(env.DB_2, group)).toEqual([]);
    expect(await directoryRow(group)).toEqual({ shard: 1, movingTo: null, progress: null });
    expectError(await moveState(internalKey, group), "move_not_found");
    expectEnvelope(await call("POST", "/ads/", { key, body: adBody(sellerId) }), 200);

    // A runner that died in the switch, after fencing the group's writes: they are refused until the move
    // is finished or abandoned, and abandoning takes them on the old shard again.
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    const diesSwitching = { ...shards, directory: failingAt(env.DIRECTORY, /moving_to = NULL/) };
    await expect(advanceMove(diesSwitching, group, { settleMs: 0, budgetMs: 60_000 })).rejects.toThrow(
      "the runner died",
    );
    expect((await moveState(internalKey, group)).body.data).toMatchObject({
      state: "moving",
      blocker: "the runner died here",
    });
    expectError(await call("POST", "/ads/", { key, body: adBody(sellerId) }), "group_moving");
    expectEnvelope(await abandon(internalKey, group), 200);
    const written = await call("POST", "/ads/", { key, body: adBody(sellerId, { title: "Na het afbreken" }) });
    expectEnvelope(written, 200);
    expect(nothingOf(await groupHoldings(env.DB_2, group))).toBe(true);
    expect((await groupHoldings(env.DB, group)).ads).toBe((atStart.ads ?? 0) + 2);
    expect(await moveTriggers(env.DB, group)).toEqual([]);
    expect(await moveTriggers(env.DB_2, group)).toEqual([]);
    // Nothing to abandon now; the group moves as any other.
    expectError(await abandon(internalKey, group), "validation_failed");
    expect((await moved(internalKey, group, 2)).state).toBe("moved");
    // A move that switched is not abandoned: it is confirmed, or reversed.
    const late = await abandon(internalKey, group);
    expect(expectError(late, "move_under_way")[0]?.message).toMatch(
      /has switched; confirm it .*or move the group back/,
    );
  }, 120_000);

  it("ends a move whose runner died in the catch-up (abandoned), and one whose confirmation died half-way (confirmed again)", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    await seedAds(sellerId, 50, 1);
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    // The copy done (steps until the catch-up has run a round), a client's write to catch up, and the
    // runner dies reading the change log.
    let step: MoveState | null = null;
    while (!step?.rounds) step = (await advanceMove(shards, group, { settleMs: 60_000, budgetMs: 0 })).state;
    expect(step.copied).toBeGreaterThan(50);
    expectEnvelope(await call("POST", "/ads/", { key, body: adBody(sellerId, { title: "Tijdens het inhalen" }) }), 200);
    const diesCatchingUp = { ...shards, source: failingAt(env.DB, /FROM move_log/) };
    await expect(advanceMove(diesCatchingUp, group, { settleMs: 60_000, budgetMs: 0 })).rejects.toThrow(
      "the runner died",
    );
    expect((await moveState(internalKey, group)).body.data).toMatchObject({ blocker: "the runner died here" });
    expectEnvelope(await abandon(internalKey, group), 200);
    expect(nothingOf(await groupHoldings(env.DB_2, group))).toBe(true);
    expect((await groupHoldings(env.DB, group)).ads).toBe(51);

    // A move to its end, and a confirmation that dies after dropping part of the old shard's rows: the
    // group works on its new shard meanwhile, and the same call again drops the rest.
    await moved(internalKey, group, 2);
    await expect(dropGroup(failingAt(env.DB, /DELETE FROM "ads"/), group)).rejects.toThrow("the runner died");
    expect((await groupHoldings(env.DB, group)).ads, "the ads not dropped yet").toBe(51);
    expectEnvelope(await call("POST", "/ads/", { key, body: adBody(sellerId, { title: "Na de verhuizing" }) }), 200);
    await switchedLongAgo(group);
    await confirmed(internalKey, group);
    expect(nothingOf(await groupHoldings(env.DB, group))).toBe(true);
    expect((await groupHoldings(env.DB_2, group)).ads).toBe(52);
    expect(await moveTriggers(env.DB, group)).toEqual([]);
  }, 120_000);

  it("refuses a second move of a moving group and leaves nothing behind; a move back confirms the first once it may", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    await createAd(key, sellerId, { categoryId: PAID_CATEGORY });
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    const backWhileMoving = await call("POST", `/clientgroups/${group}/move`, { key: internalKey, body: { shard: 1 } });
    expect(expectError(backWhileMoving, "move_under_way")[0]?.message).toMatch(/is moving to shard 2/);
    expect(defined(await directoryRow(group))).toMatchObject({ shard: 1, movingTo: 2 });
    await moved(internalKey, group, 2);
    // Back before the first is confirmed: refused until no isolate can route by the switch, with when.
    const tooSoon = await call("POST", `/clientgroups/${group}/move`, { key: internalKey, body: { shard: 1 } });
    expect(expectError(tooSoon, "move_under_way")[0]?.message).toMatch(
      /can be confirmed, and the group moved again, in \d+ s/,
    );
    expect(Number(tooSoon.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(defined(await directoryRow(group))).toMatchObject({ shard: 2, movingTo: null });
    expect(((await moveState(internalKey, group)).body.data as MoveState).state).toBe("moved");
    // Once it may (the switch moved back in time), the move back confirms the first and runs.
    await switchedLongAgo(group);
    const back = await moved(internalKey, group, 1);
    expect(back).toMatchObject({ from: 2, to: 1, state: "moved", blocker: null });
    expect(await confirmed(internalKey, group)).toEqual({ groupId: group, deleted: { 2: expect.any(Number) } });
    expect(nothingOf(await groupHoldings(env.DB_2, group))).toBe(true);
    expect((await groupHoldings(env.DB, group)).ads).toBe(1);
    expect(await directoryRow(group)).toEqual({ shard: 1, movingTo: null, progress: null });
  }, 120_000);

  it("leaves a moving group's rows to the move: no shard's scheduled work sends its notices before the switch, or twice after it", async () => {
    const { group, internalKey, sellerId } = await groupOnShard1();
    const neighbour = await newClient({ partner: true, shard: 1 });
    const { userId: neighbourId } = await createUser(neighbour.key);
    // A budget notice of each, waiting in shard 1's outbox.
    for (const userId of [sellerId, neighbourId]) await budgetNotice(userId);
    const sent: number[] = [];
    const recording: NotificationSender = {
      send: async (notice) => {
        sent.push(notice.userId);
      },
    };
    const runNotices = (shard: number) =>
      sendNotifications(jobContext(onTestShard(env, shard)), { sender: recording, limit: 1000 });
    // Copied (steps until the catch-up has run a round), shard 2 holds the seller's notice: its cron leaves it.
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    let step: MoveState | null = null;
    while (!step?.rounds) step = (await advanceMove(shards, group, { settleMs: 60_000, budgetMs: 0 })).state;
    const copied = await env.DB_2.prepare("SELECT count(*) AS n FROM notifications WHERE user_id = ?")
      .bind(sellerId)
      .first<{ n: number }>();
    expect(copied?.n, "the notice is on shard 2").toBe(1);
    await runNotices(2);
    expect(sent).not.toContain(sellerId);
    // After the switch, shard 1's fenced rows are left to shard 2, which sends the notice once; shard 1
    // sends its other group's notice.
    await moved(internalKey, group, 2);
    await runNotices(1);
    expect(sent.filter((userId) => userId === sellerId)).toEqual([]);
    expect(sent.filter((userId) => userId === neighbourId)).toEqual([neighbourId]);
    await runNotices(2);
    await runNotices(1);
    await runNotices(2);
    expect(sent.filter((userId) => userId === sellerId)).toEqual([sellerId]);
    expect(sent.filter((userId) => userId === neighbourId)).toEqual([neighbourId]);
  }, 120_000);
});
