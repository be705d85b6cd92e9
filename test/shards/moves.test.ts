import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runScheduledOnEveryShard } from "../../src/cron";
import { advanceMove, beginMove, groupHoldings, type MoveShards, type MoveState } from "../../src/db/moves";
import { CLIENT_CACHE_MS, MOVING_CLIENT_CACHE_MS } from "../../src/services/accounts/apiClients";
import { CONFIRM_AFTER_MS } from "../../src/services/accounts/groupMoves";
import { receivedBy, receiver } from "../fixtures/hooks";
import { call, defined, eventually, expectEnvelope, expectError, groupOf, newClient } from "../harness/api";
import { activate, adBody, createAd, createUser, PAID_CATEGORY, seedAds } from "../harness/data";
import { listingsAtMarketplace } from "../harness/marketplace";
import { confirmed, failingAt, groupOnShard1, moved, movingClient, sleep } from "../harness/moves";

/**
 * Moving a client group between shards online (src/db/moves/): its clients publish, pay and receive
 * webhooks while the move copies, catches up and switches; afterwards nothing is lost or done twice,
 * and once the move is confirmed nothing of the group stays on its old shard.
 */

const SHARDS: Record<number, D1Database> = { 1: env.DB, 2: env.DB_2 };

const placedJobsOf = async (key: string, userId: number) =>
  (await call("GET", `/jobs/?userId=${userId}&itemsPerPage=500`, { key })).body.data as {
    queueItemId: number;
    attempts: number;
    adId: number;
    kind: string;
    state: string;
  }[];

describe("moving a client group between shards", () => {
  it("moves a group while its clients publish, pay and receive webhooks: nothing lost, nothing done twice, nothing left behind", async () => {
    const world = await groupOnShard1();
    const { group, key, internalKey, sellerId } = world;
    const hook = receiver("ok");
    expect((await call("POST", "/webhooks/", { key, body: { url: hook.url } })).status).toBe(200);
    const before: number[] = [];
    for (let i = 0; i < 3; i += 1)
      before.push(
        (await createAd(key, sellerId, { categoryId: PAID_CATEGORY, title: `Voor de verhuizing ${i}` })).adId,
      );
    for (const adId of before.slice(0, 2))
      expect(
        (await call("POST", "/publish/", { key, body: { userId: sellerId, adId, portal: "portal_a" } })).status,
      ).toBe(200);
    // A few hundred more rows, so that the copy takes pages.
    await seedAds(sellerId, 600, 1);
    await eventually(async () => {
      const jobs = await placedJobsOf(key, sellerId);
      return jobs.every((job) => job.state === "done") ? jobs : undefined;
    }, "the first placements");
    const cursor = (await call("GET", "/events/?after=latest", { key })).body.cursor as number;

    // The clients work throughout the move: ads written and published, the wallet topped up.
    const client = movingClient(key);
    const internal = movingClient(internalKey);
    const written: number[] = [];
    let toppedUp = 0;
    let moving = true;
    const work = (async () => {
      for (let i = 0; moving || i < 2; i += 1) {
        const ad = await client.call(
          "POST",
          "/ads/",
          adBody(sellerId, { categoryId: PAID_CATEGORY, title: `Tijdens de verhuizing ${i}` }),
        );
        expect(ad.status, JSON.stringify(ad.body)).toBe(200);
        const adId = ad.body.data.adId as number;
        written.push(adId);
        const published = await client.call("POST", "/publish/", { userId: sellerId, adId, portal: "portal_a" });
        expect(published.status, JSON.stringify(published.body)).toBe(200);
        const topUp = await internal.call("POST", "/wallet/", {
          userId: sellerId,
          amount: 500,
          description: `storting ${i}`,
        });
        expect(topUp.status, JSON.stringify(topUp.body)).toBe(200);
        toppedUp += 500;
        // A pause between rounds, as a client takes: without one, the pool's isolate never gets to the move's timers.
        await sleep(20);
      }
    })();
    let report: MoveState | undefined;
    try {
      report = await moved(internalKey, group, 2);
    } finally {
      moving = false;
      await work;
    }
    expect(report).toMatchObject({ group, from: 1, to: 2 });
    console.info(`group move: ${JSON.stringify(report)}; writes waited ${JSON.stringify(client.refused)} ms`);
    expect(
      await env.DIRECTORY.prepare("SELECT shard, moving_to AS m FROM client_groups WHERE id = ?").bind(group).first(),
    ).toEqual({ shard: 2, m: null });

    // Every job ends, on the new shard, once.
    let all: Awaited<ReturnType<typeof placedJobsOf>> = [];
    const jobs = await eventually(async () => {
      all = await placedJobsOf(key, sellerId);
      return all.length >= before.length - 1 + written.length && all.every((job) => job.state === "done")
        ? all
        : undefined;
    }, "every placement done").catch((error) => {
      throw new Error(`${error}: ${JSON.stringify(all.filter((job) => job.state !== "done"))} of ${all.length}`);
    });
    const published = [...before.slice(0, 2), ...written];
    expect(
      jobs
        .filter((job) => job.kind === "placement")
        .map((job) => job.adId)
        .sort((a, b) => a - b),
    ).toEqual([...published].sort((a, b) => a - b));
    const listings = await listingsAtMarketplace(key, sellerId);
    for (const adId of published) {
      const held = listings.filter((listing) => listing.externalRef.startsWith(`ad-${adId}-`) && listing.online);
      expect(held, `ad ${adId}: one listing at the marketplace`).toHaveLength(1);
      const status = defined((await call("GET", `/status/${sellerId}/${adId}`, { key })).body.data[0]);
      const publish = status.portals.find((p: { portal: string }) => p.portal === "portal_a")?.publish;
      expect(publish?.remoteAdId, `ad ${adId}: /status/ knows the listing`).toBe(held[0]?.remoteAdId);
    }
    // Paid once per listing, and every top-up kept.
    const balance = (await call("GET", `/wallet/${sellerId}`, { key })).body.data.balance as number;
    const price = defined(
      (await call("GET", `/jobs/?userId=${sellerId}&kind=placement&itemsPerPage=1`, { key })).body.data[0],
    ).cost as number;
    expect(balance).toBe(100_000 + toppedUp - published.length * price);

    // The events feed goes on from the cursor the old shard handed out, in order; read from the start it
    // holds every placement's event once, before the move or after.
    const activeAds = async (after: number) => {
      const feed = await call("GET", `/events/?after=${after}&limit=500`, { key });
      expect(feed.status).toBe(200);
      const events = feed.body.data as { eventId: number; type: string; adId: number | null }[];
      const ids = events.map((event) => event.eventId);
      expect(ids, "in order, each once").toEqual([...new Set(ids)].sort((a, b) => a - b));
      return events.filter((event) => event.type === "publish.active").map((event) => event.adId as number);
    };
    const sinceCursor = await activeAds(cursor);
    for (const adId of written) expect(sinceCursor, `ad ${adId} published during the move`).toContain(adId);
    for (const adId of before.slice(0, 2))
      expect(sinceCursor, `ad ${adId}, published before the cursor, is not read again`).not.toContain(adId);
    expect((await activeAds(0)).sort((a, b) => a - b)).toEqual([...published].sort((a, b) => a - b));
    // The webhook receiver gets the events of the new shard. A delivery under way at the switch may come
    // again (at least once), with the webhook-id it had, and the event's id on its new shard.
    const next = await createAd(key, sellerId, { categoryId: PAID_CATEGORY, title: "Na de verhuizing" });
    expect(
      (await call("POST", "/publish/", { key, body: { userId: sellerId, adId: next.adId, portal: "portal_a" } }))
        .status,
    ).toBe(200);
    // (A delivery the switch refused is sent again after its backoff, so it may come after later ones.)
    const announced = (all: { body: string }[], adId: number) =>
      all.some((r) => r.body.includes(`"adId":${adId}`) && r.body.includes("publish.active"));
    let deliveries: Awaited<ReturnType<typeof receivedBy>> = [];
    const received = await eventually(async () => {
      deliveries = await receivedBy(hook.name);
      return [...written, next.adId].every((adId) => announced(deliveries, adId)) ? deliveries : undefined;
    }, "the webhooks of every publication, during the move and after").catch((error) => {
      throw new Error(`${error}: none for ${[...written, next.adId].filter((adId) => !announced(deliveries, adId))}`);
    });
    const bodies = new Map<string, string>();
    const withoutEventId = (body: string) => {
      const { data, type } = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      return JSON.stringify({ type, data: { ...data, eventId: undefined } });
    };
    for (const r of received) {
      const id = defined(r.headers["webhook-id"]);
      expect(bodies.get(id) ?? withoutEventId(r.body), `webhook-id ${id}: one event`).toBe(withoutEventId(r.body));
      bodies.set(id, withoutEventId(r.body));
    }

    // Confirmed: nothing of the group stays on shard 1; shard 2 holds it all, and the clients carry on.
    await sleep(MOVING_CLIENT_CACHE_MS);
    const onTarget = await groupHoldings(SHARDS[2] as D1Database, group);
    expect(await confirmed(internalKey, group)).toEqual({ groupId: group, deleted: { 1: expect.any(Number) } });
    const left = await groupHoldings(SHARDS[1] as D1Database, group);
    expect(
      Object.values(left).every((n) => n === 0),
      JSON.stringify(left),
    ).toBe(true);
    expect(await groupHoldings(SHARDS[2] as D1Database, group)).toEqual(onTarget);
    const { results: triggers } = await env.DB.prepare(
      `SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'move_${group}_%'`,
    ).all();
    expect(triggers).toEqual([]);
    const ads = await call("GET", `/ads/?userId=${sellerId}&itemsPerPage=1`, { key });
    expect(ads.body.totalItems, "every ad written before, during and after the move").toBe(
      before.length + 600 + written.length + 1,
    );
  }, 120_000);

  it("copies every row and every cent: the same holdings on both shards at the switch, none on the old one once confirmed", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    const user = await createUser(key);
    await activate(key, user);
    for (let i = 0; i < 3; i += 1) await createAd(key, sellerId, { categoryId: PAID_CATEGORY });
    await seedAds(user.userId, 300, 1);
    const atStart = await groupHoldings(SHARDS[1] as D1Database, group);
    // The platform's operator (an internal client of another group) moves it, with an Idempotency-Key:
    // the same request again is answered by the first answer, and moves nothing twice.
    const operator = await newClient({ internal: true, shard: 1 });
    const once = { key: operator.key, body: { shard: 2 }, headers: { "Idempotency-Key": crypto.randomUUID() } };
    const first = await call("POST", `/clientgroups/${group}/move`, once);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await call("POST", `/clientgroups/${group}/move`, once);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.body.data).toEqual(first.body.data);
    // (On a busy machine the first call may answer `moving`: calls without the key run it on.)
    const firstState = first.body.data as MoveState;
    const report = firstState.state === "moved" ? firstState : await moved(operator.key, group, 2);
    const [source, target] = [
      await groupHoldings(SHARDS[1] as D1Database, group),
      await groupHoldings(SHARDS[2] as D1Database, group),
    ];
    expect(source).toEqual(atStart);
    expect(target).toEqual(source);
    expect(report.copied).toBeGreaterThanOrEqual(300);
    // The old shard refuses the group's writes until the move is confirmed.
    await expect(
      SHARDS[1]?.prepare("UPDATE ads SET title = 'x' WHERE user_id = ?").bind(sellerId).run(),
    ).rejects.toThrow(/group_moving/);
    // An isolate that still routes by what it read before the switch finds the old shard refusing: 503.
    const stale = await newClient({ internal: true, groupId: group });
    await env.DIRECTORY.prepare("UPDATE client_groups SET shard = 1 WHERE id = ?").bind(group).run();
    expect((await call("GET", `/ads/?userId=${sellerId}&itemsPerPage=1`, { key: stale.key })).status).toBe(200);
    await env.DIRECTORY.prepare("UPDATE client_groups SET shard = 2 WHERE id = ?").bind(group).run();
    const refused = await call("POST", "/ads/", { key: stale.key, body: adBody(sellerId) });
    expectError(refused, "group_moving");
    expect(refused.headers.get("Retry-After")).toBe("2");
    await sleep(MOVING_CLIENT_CACHE_MS);
    await confirmed(internalKey, group);
    expect(Object.values(await groupHoldings(SHARDS[1] as D1Database, group)).every((n) => n === 0)).toBe(true);
    expect(await groupHoldings(SHARDS[2] as D1Database, group)).toEqual(target);
    // The tallies a list counts by are rebuilt by the new shard's triggers.
    const list = await call("GET", `/ads/?userId=${user.userId}&itemsPerPage=1`, { key });
    expect(list.body.totalItems).toBe(300);
  }, 120_000);

  it("resumes a move where it stopped: a runner dead during the copy, and one dead in the switch, which the cron finishes", async () => {
    const { group, key, internalKey, sellerId } = await groupOnShard1();
    // A placement, done: the switch will find it as a consumer cut off by the fence would leave it.
    const placed = await createAd(key, sellerId, { categoryId: PAID_CATEGORY, title: "Geplaatst voor de verhuizing" });
    expect(
      (await call("POST", "/publish/", { key, body: { userId: sellerId, adId: placed.adId, portal: "portal_a" } }))
        .status,
    ).toBe(200);
    const [placement] = await eventually(async () => {
      const jobs = await placedJobsOf(key, sellerId);
      return jobs.length === 1 && jobs[0]?.state === "done" ? jobs : undefined;
    }, "the placement");
    await seedAds(sellerId, 1200, 1);
    const shards: MoveShards = { directory: env.DIRECTORY, source: env.DB, target: env.DB_2 };
    const state = async () => {
      const answer = await call("GET", `/clientgroups/${group}/move`, { key: internalKey });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.data as MoveState;
    };
    expect(await beginMove(env.DIRECTORY, { group, from: 1, to: 2 })).toBe(true);
    // A step runs for its budget (at least a page) and keeps where it got to.
    const firstStep = defined((await advanceMove(shards, group, { settleMs: 0, budgetMs: 0 })).state);
    expect(firstStep).toMatchObject({ state: "moving", pauseMs: null, eventsFrom: null });
    expect(firstStep.copied).toBeGreaterThan(0);
    expect(await state()).toEqual(firstStep);
    // Until the switch, nothing but the move writes the group's rows on the new shard (not its cron): a
    // statement that also touches another group's rows there changes theirs alone.
    const neighbour = await newClient({ partner: true, shard: 2 });
    const { userId: neighbourId } = await createUser(neighbour.key);
    const nameOnShard2 = (userId: number) =>
      env.DB_2.prepare("SELECT last_name AS lastName FROM users WHERE id = ?")
        .bind(userId)
        .first<{ lastName: string }>();
    const copiedName = (await nameOnShard2(sellerId))?.lastName;
    expect(copiedName, "the seller is copied in the first step").toBeDefined();
    const touched = await env.DB_2.prepare("UPDATE users SET last_name = 'Door de cron' WHERE id IN (?1, ?2)")
      .bind(sellerId, neighbourId)
      .run();
    expect(touched.meta.changes).toBe(1);
    expect((await nameOnShard2(sellerId))?.lastName).toBe(copiedName);
    expect((await nameOnShard2(neighbourId))?.lastName).toBe("Door de cron");
    // A runner that dies copying a page: what the step before copied is kept, and the next runner may
    // take the move over at once.
    const diesCopying = { ...shards, target: failingAt(env.DB_2, /^\s*INSERT INTO/) };
    await expect(advanceMove(diesCopying, group, { settleMs: 0, budgetMs: 0 })).rejects.toThrow("the runner died");
    // GET /move names what stopped it.
    expect(await state()).toEqual({ ...firstStep, blocker: "the runner died here" });
    const secondStep = defined((await advanceMove(shards, group, { settleMs: 0, budgetMs: 0 })).state);
    expect(secondStep.copied).toBeGreaterThan(firstStep.copied);
    expect(secondStep.blocker, "a runner got past it").toBeNull();
    // The clients write on meanwhile.
    const during = await call("POST", "/ads/", { key, body: adBody(sellerId, { title: "Tijdens de verhuizing" }) });
    expect(during.status, JSON.stringify(during.body)).toBe(200);
    // The placement's consumer placed the listing and then found its last write refused by the fence: the
    // job is left processing (which no consumer claims) and is copied so.
    await env.DB.prepare("UPDATE queue_items SET status = 'processing' WHERE id = ?")
      .bind(defined(placement).queueItemId)
      .run();
    // A runner that dies in the switch, after fencing writes and numbering the group's events, before the
    // directory names the new shard: writes wait (503) until a runner finishes it, which the cron is.
    // (It waits out the routes isolates read before the move began, as every switch does.)
    const diesSwitching = { ...shards, directory: failingAt(env.DIRECTORY, /moving_to = NULL/) };
    const settled = { settleMs: CLIENT_CACHE_MS, budgetMs: 60_000 };
    await expect(advanceMove(diesSwitching, group, settled)).rejects.toThrow("the runner died");
    expect(await state()).toMatchObject({ state: "moving", blocker: "the runner died here" });
    expectError(await call("POST", "/ads/", { key, body: adBody(sellerId) }), "group_moving");
    await runScheduledOnEveryShard(env, Date.now());
    const done = await state();
    expect(done).toMatchObject({ state: "moved", from: 1, to: 2 });
    expect(done.copied).toBeGreaterThanOrEqual(1200);
    // Copied once and numbered once: the same holdings on both shards, no event staged or twice.
    const [source, target] = [await groupHoldings(env.DB, group), await groupHoldings(env.DB_2, group)];
    // (Besides what the new shard wrote since its switch, in the same cron run: the job sent again, its
    // events, and the market data its cron pulled.)
    const sinceSwitch = ["events", "bids", "ad_statistics"];
    const copied = (holdings: Record<string, number>) =>
      Object.fromEntries(Object.entries(holdings).filter(([table]) => !sinceSwitch.includes(table)));
    expect(copied(target)).toEqual(copied(source));
    expect(target.events).toBeGreaterThanOrEqual(source.events ?? 0);
    expect(source.ads).toBe(1202);
    const staged = await env.DB_2.prepare("SELECT count(*) AS n FROM events WHERE id < 0").first<{ n: number }>();
    expect(staged?.n).toBe(0);
    expect(
      await env.DB_2.prepare("SELECT events_from AS eventsFrom FROM client_groups WHERE id = ?").bind(group).first(),
    ).toEqual({ eventsFrom: done.eventsFrom });
    // The job the switch left processing is sent again and runs on the new shard (its second attempt), and
    // the marketplace holds one listing of the ad, not two. (Its first run had ended here, so the second
    // finds its listing live and ends; a job cut off for real has not recorded its listing yet.)
    await eventually(async () => {
      const jobs = await placedJobsOf(key, sellerId);
      return jobs[0]?.state !== "processing" && jobs[0]?.attempts === 2 ? jobs : undefined;
    }, "the cut-off placement, run again");
    const listings = (await listingsAtMarketplace(key, sellerId)).filter(
      (listing) => listing.externalRef.startsWith(`ad-${placed.adId}-`) && listing.online,
    );
    expect(listings).toHaveLength(1);
    // The group's writes go to the new shard now (a client's cache of a moving group lasts a second).
    const after = await movingClient(key).call("POST", "/ads/", adBody(sellerId, { title: "Na de verhuizing" }));
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    // Nobody confirms it: the cron does, a minute after the switch (here, its time moved back by one).
    await runScheduledOnEveryShard(env, Date.now());
    expect((await groupHoldings(env.DB, group)).ads).toBe(1202);
    await env.DIRECTORY.prepare(
      "UPDATE client_groups SET move_progress = json_set(move_progress, '$.switchedAt', ?2) WHERE id = ?1",
    )
      .bind(group, Date.now() - CONFIRM_AFTER_MS)
      .run();
    await runScheduledOnEveryShard(env, Date.now());
    expect(Object.values(await groupHoldings(env.DB, group)).every((n) => n === 0)).toBe(true);
    // Confirmed: the group has no move to report any more.
    expectError(await call("GET", `/clientgroups/${group}/move`, { key: internalKey }), "move_not_found");
  }, 120_000);

  it("keeps what a group's clients registered and sent with a key: a keyed repeat is a replay after moves of either group", async () => {
    const { group, key, sellerId } = await groupOnShard1();
    // The platform's operator: an internal client of a group of its own on shard 2, writing on shard 1.
    const operator = await newClient({ internal: true, shard: 2 });
    const operatorGroup = await groupOf(operator.client.id);
    expectEnvelope(await call("PATCH", "/client/", { key, body: { returnOrigins: ["https://erp.example.com"] } }), 200);
    const balance = async () => (await call("GET", `/wallet/${sellerId}`, { key })).body.data.balance as number;
    const before = await balance();
    const topUp = {
      key: operator.key,
      body: { userId: sellerId, amount: 777, description: "eenmalig" },
      headers: { "Idempotency-Key": crypto.randomUUID() },
    };
    const first = await call("POST", "/wallet/", topUp);
    expectEnvelope(first, 200);
    // One key is one request across shards: another request with it, on a user of shard 2, is refused.
    const { userId: elsewhere } = await createUser((await newClient({ partner: true, shard: 2 })).key);
    expectError(
      await call("POST", "/wallet/", { ...topUp, body: { ...topUp.body, userId: elsewhere } }),
      "idempotency_conflict",
    );
    const repeated = async (why: string) => {
      const again = await call("POST", "/wallet/", topUp);
      expect(again.headers.get("Idempotent-Replayed"), why).toBe("true");
      expect(again.body, why).toEqual(first.body);
      expect(await balance(), why).toBe(before + 777);
    };
    const moveAndConfirm = async (moving: number, to: number) => {
      await moved(operator.key, moving, to);
      await sleep(MOVING_CLIENT_CACHE_MS);
      await confirmed(operator.key, moving);
      await sleep(MOVING_CLIENT_CACHE_MS);
    };
    await moveAndConfirm(group, 2);
    await repeated("after the seller's group moved to shard 2");
    await moveAndConfirm(group, 1);
    await repeated("after it moved back");
    await moveAndConfirm(operatorGroup, 1);
    await repeated("after the operator's own group moved");
    // The return origins the seller's client registered came along: consent still comes home.
    expect((await call("GET", "/client/", { key })).body.data.returnOrigins).toEqual(["https://erp.example.com"]);
    expectEnvelope(
      await call("POST", `/oauth/${sellerId}/portal_b/`, { key, body: { returnUrl: "https://erp.example.com/back" } }),
      200,
    );
  }, 120_000);

  it("refuses a move to the shard the group is on, to a shard that does not exist, and of an unknown group (404)", async () => {
    const { group, key, internalKey } = await groupOnShard1();
    const refusals = [
      [internalKey, group, 1, "validation_failed", `shard: group ${group} is on shard 1 already`],
      [internalKey, group, 9, "validation_failed", "shard: no shard 9; the shards are 1, 2"],
      [internalKey, 999_999, 2, "group_not_found", "groupId: no client group 999999"],
      [key, group, 2, "internal_only", "groupId: groups are moved by internal clients only"],
    ] as const;
    for (const [caller, groupId, shard, code, message] of refusals) {
      const answer = await call("POST", `/clientgroups/${groupId}/move`, { key: caller, body: { shard } });
      expect(expectError(answer, code).map((d) => d.message)).toEqual([message]);
    }
    expectError(
      await call("POST", `/clientgroups/${group}/move`, { key: internalKey, body: { shard: "2" } }),
      "validation_failed",
    );
    expectError(await call("POST", "/clientgroups/999999/move/confirm", { key: internalKey }), "group_not_found");
  });
});
