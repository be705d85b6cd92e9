import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ID_BLOCK_SIZE, topUpIdBlocks } from "../../src/db/ids";
import { shardForNewGroup } from "../../src/db/shards";
import type { Env } from "../../src/env";
import { handleJobs } from "../../src/jobs/consumer";
import type { JobMessage } from "../../src/services/shared";
import { receivedBy, receiver } from "../fixtures/hooks";
import { call, defined, eventually, expectEnvelope, expectError, groupOf, newClient, twoClients } from "../harness/api";
import { activate, contactBody, createAd, createUser, PAID_CATEGORY, seedAds } from "../harness/data";
import { connectedSeller, listingsAtMarketplace, settledPublication, walletBalance } from "../harness/marketplace";
import { clientTasks, cronAt } from "../harness/tasks";

/**
 * The data spread over two shards (src/db/shards.ts): each client's rows live on its group's shard and
 * nowhere else, its ids come from blocks the directory leased to its group, and its requests, jobs and
 * cron work run on that shard.
 */

const SHARDS = { 1: env.DB, 2: env.DB_2 } as const;

/** How many rows of `table` with this id each shard holds. */
async function rowsOnEachShard(table: string, id: number) {
  const count = async (d1: D1Database) =>
    defined(await d1.prepare(`SELECT count(*) AS n FROM ${table} WHERE id = ?`).bind(id).first<{ n: number }>()).n;
  return { 1: await count(SHARDS[1]), 2: await count(SHARDS[2]) };
}

/** The shard the directory says the group of an id's block lives on. */
async function shardOfId(kind: string, id: number) {
  const row = await env.DIRECTORY.prepare(
    "SELECT g.shard AS shard FROM id_blocks b JOIN client_groups g ON g.id = b.group_id WHERE b.kind = ? AND b.block = ?",
  )
    .bind(kind, Math.floor(id / ID_BLOCK_SIZE))
    .first<{ shard: number }>();
  return row?.shard;
}

describe("two shards", () => {
  it("a client's rows live on its group's shard only, with ids from blocks the directory leased to its group", async () => {
    const ids: string[] = [];
    for (const shard of [1, 2] as const) {
      const { key } = await twoClients(shard);
      const { userId } = await createUser(key);
      const { adId } = await createAd(key, userId);
      const contactId = defined(
        (await call("POST", "/contacts/", { key, body: contactBody(userId) })).body.data[0]?.contactId as number,
      );
      for (const [table, id] of [
        ["users", userId],
        ["ads", adId],
        ["contacts", contactId],
      ] as const) {
        expect(await rowsOnEachShard(table, id), `${table} ${id}`).toEqual({
          1: shard === 1 ? 1 : 0,
          2: shard === 2 ? 1 : 0,
        });
        expect(await shardOfId(table, id), `${table} ${id}`).toBe(shard);
        ids.push(`${table} ${id}`);
      }
      // Read back over the API from its own shard.
      expect((await call("GET", `/ads/?userId=${userId}`, { key })).body.data).toMatchObject([{ adId, userId }]);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("publishes, charges and delivers webhooks on shard 2: the job runs there and its listing reaches the marketplace", async () => {
    const { key, internalKey } = await twoClients(2);
    const hook = receiver("ok");
    expectEnvelope(await call("POST", "/webhooks/", { key, body: { url: hook.url } }), 200);
    const userId = await connectedSeller(key, internalKey, 100_000);
    const { adId } = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    const published = await call("POST", "/publish/", { key, body: { userId, adId, portal: "portal_a" } });
    expectEnvelope(published, 200);
    const jobId = Number(published.headers.get("Location")?.split("/").pop());
    expect((await settledPublication(key, userId, adId))?.active).toBe(true);

    expect(await rowsOnEachShard("queue_items", jobId)).toEqual({ 1: 0, 2: 1 });
    const job = await env.DB_2.prepare("SELECT status FROM queue_items WHERE id = ?").bind(jobId).first();
    expect(job).toEqual({ status: "done" });
    const listings = await listingsAtMarketplace(key, userId);
    expect(listings).toHaveLength(1);
    expect(await walletBalance(key, userId)).toBeLessThan(100_000);
    const events = await eventually(async () => {
      const received = await receivedBy(hook.name);
      return received.some((r) => r.body.includes(`"adId":${adId}`)) ? received : undefined;
    }, "the webhook of the publication");
    expect(events.length).toBeGreaterThan(0);
  });

  it("the cron runs the due tasks of every shard", async () => {
    const runsOf = async (shard: 1 | 2) => {
      const { key, internalKey } = await twoClients(shard);
      const tasks = clientTasks(key, internalKey);
      const { userId } = await tasks.sellerWithAds(1);
      const { taskId } = await tasks.task(userId, { time: "07:30" });
      return { tasks, userId, taskId };
    };
    const [one, two] = [await runsOf(1), await runsOf(2)];
    await cronAt("2026-12-02T06:30:00.000Z");
    for (const { tasks, userId, taskId } of [one, two])
      expect(await tasks.runs(userId, taskId), `task ${taskId}`).toHaveLength(1);
  });

  it("leases of two shards at once never share a block, and a block whose copy was lost is copied, not leased again", async () => {
    const users: Record<1 | 2, number> = { 1: 0, 2: 0 };
    for (const shard of [1, 2] as const) {
      const { key } = await twoClients(shard);
      users[shard] = (await createUser(key)).userId;
      // More than half of its block of ads used: the next top-up leases it another.
      await seedAds(users[shard], ID_BLOCK_SIZE / 2 + 10, shard);
    }
    await Promise.all(
      ([1, 2, 1, 2] as const).map((shard) =>
        topUpIdBlocks({ number: shard, d1: SHARDS[shard], directory: env.DIRECTORY }),
      ),
    );

    const { results: directory } = await env.DIRECTORY.prepare(
      "SELECT b.kind, b.block, b.group_id AS groupId, g.shard FROM id_blocks b JOIN client_groups g ON g.id = b.group_id",
    ).all<{ kind: string; block: number; groupId: number; shard: number }>();
    for (const shard of [1, 2] as const) {
      const { results: copies } = await SHARDS[shard]
        .prepare("SELECT kind, block, group_id AS groupId FROM id_blocks")
        .all<{ kind: string; block: number; groupId: number }>();
      // Every block a shard holds is the directory's, of the same group; a group's newest block is on its shard.
      const leased = new Map(directory.map((row) => [`${row.kind} ${row.block}`, row]));
      // (Block 0 is the one every new database gives group 1: migration 0030.)
      for (const copy of copies.filter((row) => row.block > 0)) {
        const lease = leased.get(`${copy.kind} ${copy.block}`);
        expect(lease?.groupId, `${copy.kind} ${copy.block}`).toBe(copy.groupId);
        expect(lease?.shard, `${copy.kind} ${copy.block}`).toBe(shard);
      }
      const group = await groupOfUser(users[shard], SHARDS[shard]);
      const newest = Math.max(
        ...directory.filter((row) => row.kind === "ads" && row.groupId === group).map((r) => r.block),
      );
      expect(copies.some((row) => row.kind === "ads" && row.block === newest)).toBe(true);
      expect(directory.find((row) => row.kind === "ads" && row.block === newest)?.shard).toBe(shard);
    }

    // Shard 2 loses its copy of its group's newest block of ads: the next top-up copies it back.
    const group = await groupOfUser(users[2], SHARDS[2]);
    const lost = defined(
      await env.DB_2.prepare("SELECT max(block) AS block FROM id_blocks WHERE kind = 'ads' AND group_id = ?")
        .bind(group)
        .first<{ block: number }>(),
    ).block;
    await env.DB_2.prepare("DELETE FROM id_blocks WHERE kind = 'ads' AND block = ?").bind(lost).run();
    const leasedBefore = await blocksLeased(group);
    await topUpIdBlocks({ number: 2, d1: env.DB_2, directory: env.DIRECTORY });
    expect(await blocksLeased(group)).toBe(leasedBefore);
    expect(
      await env.DB_2.prepare("SELECT group_id AS g FROM id_blocks WHERE kind = 'ads' AND block = ?").bind(lost).first(),
    ).toEqual({ g: group });
  });

  it("an internal client's call runs on the shard of the ids it names, in its path, query or body", async () => {
    const internal = await newClient({ internal: true, shard: 1 });
    const partner = await newClient({ partner: true, shard: 2 });
    const onShard2 = await createUser(partner.key);
    const onShard1 = await createUser(internal.key);
    const key = internal.key;

    expect((await call("GET", `/users/${onShard2.userId}`, { key })).body.data[0]).toMatchObject({
      userId: onShard2.userId,
    });
    expectEnvelope(await call("PUT", "/users/", { key, body: { userId: onShard2.userId, city: "Venlo" } }), 200);
    expect(await env.DB_2.prepare("SELECT city FROM users WHERE id = ?").bind(onShard2.userId).first()).toEqual({
      city: "Venlo",
    });
    const { adId } = await createAd(key, onShard2.userId);
    expect(await rowsOnEachShard("ads", adId)).toEqual({ 1: 0, 2: 1 });
    expect((await call("GET", `/ads/?userId=${onShard2.userId}`, { key })).body.data).toMatchObject([{ adId }]);
    expectEnvelope(
      await call("POST", "/wallet/", {
        key,
        body: { userId: onShard2.userId, amount: 500, description: "opwaardering" },
      }),
      200,
    );
    expect((await call("GET", `/wallet/${onShard2.userId}`, { key })).body.data.balance).toBe(500);

    // A user created for another client lives with that client's group.
    const forPartner = await createUser(key, { clientId: partner.client.id });
    expect(await rowsOnEachShard("users", forPartner.userId)).toEqual({ 1: 0, 2: 1 });
    expect((await call("GET", `/users/${forPartner.userId}`, { key: partner.key })).body.data[0]).toMatchObject({
      userId: forPartner.userId,
    });

    // Ids of two shards are ids of two client groups: refused, naming the field.
    const across = await call("PUT", "/users/", {
      key,
      body: { userId: onShard2.userId, walletUserId: onShard1.userId },
    });
    expectError(across, "client_group_mismatch");
    expect(across.body.errorDetails?.[0]?.field).toBe("walletUserId");
    // Names the prototype's own keys carry are no routing fields: refused as unknown, never a 500.
    for (const query of ["__proto__=1", "constructor=1", "toString[x]=1"])
      expectError(await call("GET", `/jobs/?${query}`, { key }), "unknown_field");
    expectError(
      await call("PUT", "/users/", { key, body: { userId: onShard2.userId, constructor: 1 } }),
      "unknown_field",
    );
    // An id of no block is looked for on the client's own shard, and is not found.
    expectError(await call("GET", "/users/2000000000", { key }), "user_not_found");
    // A partner client's call stays on its own shard, whatever it names.
    expectError(
      await call("GET", `/users/${onShard2.userId}`, { key: (await newClient({ shard: 1 })).key }),
      "user_not_found",
    );
  });

  it("an internal client's lists of users and jobs span both shards, page by page, in the list's order", async () => {
    // An internal client of either shard lists both: its requests' own shard is not shard 1's binding.
    const [internal, internalOnShard2] = [
      await newClient({ internal: true, shard: 1 }),
      await newClient({ internal: true, shard: 2 }),
    ];
    for (const shard of [1, 2, 2]) {
      const { key } = await twoClients(shard);
      const user = await createUser(key);
      await activate(key, user);
      const { adId } = await createAd(key, user.userId);
      expectEnvelope(
        await call("POST", "/publish/", { key, body: { userId: user.userId, adId, portal: "website" } }),
        200,
      );
    }
    const idsOnShards = async (query: string) =>
      (await Promise.all([env.DB, env.DB_2].map((d1) => d1.prepare(query).all<{ id: number }>()))).flatMap(
        ({ results }) => results.map((row) => row.id),
      );
    const walk = async (path: string, idOf: (item: Record<string, number>) => number, key = internal.key) => {
      const seen: number[] = [];
      let total = 0;
      for (let page = 1; page < 100; page += 1) {
        const answer = await call("GET", `${path}page=${page}&itemsPerPage=3`, { key });
        expectEnvelope(answer, 200);
        total = answer.body.totalItems as number;
        if (answer.body.data.length === 0) break;
        seen.push(...answer.body.data.map(idOf));
      }
      return { seen, total };
    };

    const users = await walk("/users/?", (user) => user.userId as number);
    const allUsers = (await idsOnShards("SELECT id FROM users WHERE deleted_at IS NULL")).sort((a, b) => a - b);
    expect(users.seen).toEqual(allUsers);
    expect(users.total).toBe(allUsers.length);
    expect(await walk("/users/?", (user) => user.userId as number, internalOnShard2.key)).toEqual(users);

    const jobs = await walk("/jobs/?", (job) => job.queueItemId as number);
    const allJobs = (await idsOnShards("SELECT id FROM queue_items")).sort((a, b) => b - a);
    expect(jobs.seen).toEqual(allJobs);
    expect(jobs.total).toBe(allJobs.length);
    // Both shards are in them.
    const [onShard2] = (await env.DB_2.prepare("SELECT id FROM users ORDER BY id DESC LIMIT 1").all<{ id: number }>())
      .results;
    expect(users.seen).toContain(onShard2?.id);

    // A cached list spans both shards too: a user new on shard 2 is in the next answer.
    const cachedTotal = async () => {
      const answer = await call("GET", "/users/?useCache=1", { key: internal.key });
      expectEnvelope(answer, 200);
      return answer.body.totalItems as number;
    };
    const before = await cachedTotal();
    await createUser((await twoClients(2)).key);
    expect(await cachedTotal()).toBe(before + 1);

    // A shard that does not answer: 503 shard_unavailable, never a short page.
    const shardDown = withDatabaseDown("DB_2");
    const refused = await call("GET", "/users/?page=1&itemsPerPage=3", { key: internal.key, env: shardDown });
    expectError(refused, "shard_unavailable");
    expect(refused.headers.get("Retry-After")).toBe("5");
  });

  it("an internal client's list of every ad spans both shards, by cursor in creation order and by page in another", async () => {
    const internal = await newClient({ internal: true, shard: 1 });
    for (const shard of [1, 2]) {
      const { key } = await twoClients(shard);
      const { userId } = await createUser(key);
      for (const price of [500, 1500, 1000, 1000])
        await createAd(key, userId, { title: "Verdeelde bank", price: { model: "fixed", price } });
    }
    const adsOnShards = async () =>
      (
        await Promise.all(
          [env.DB, env.DB_2].map((d1) =>
            d1
              .prepare(
                "SELECT a.id AS id, a.price AS price FROM ads a JOIN users u ON u.id = a.user_id WHERE u.deleted_at IS NULL AND a.title = 'Verdeelde bank'",
              )
              .all<{ id: number; price: number | null }>(),
          ),
        )
      ).flatMap(({ results }) => results);
    const all = await adsOnShards();

    expect(all).toHaveLength(8);
    // In creation order (ids), page after page by the cursor each page hands out.
    const byCursor: number[] = [];
    let cursor: string | undefined;
    let total = 0;
    do {
      const answer = await call(
        "GET",
        `/ads/?simple=1&title=Verdeelde&itemsPerPage=3${cursor ? `&cursor=${cursor}` : ""}`,
        {
          key: internal.key,
        },
      );
      expectEnvelope(answer, 200);
      byCursor.push(...answer.body.data.map((ad: { adId: number }) => ad.adId));
      total = answer.body.totalItems as number;
      cursor = answer.body.nextCursor as string | undefined;
    } while (cursor);
    expect(byCursor).toEqual(all.map((ad) => ad.id).sort((a, b) => a - b));
    expect(total).toBe(all.length);

    // By price, highest first (SQLite puts no price last), ties by id: page by page.
    const byPrice: number[] = [];
    for (let page = 1; page <= Math.ceil(all.length / 3); page += 1) {
      const answer = await call(
        "GET",
        `/ads/?simple=1&title=Verdeelde&itemsPerPage=3&page=${page}&order[0][field]=price&order[0][descending]=true`,
        { key: internal.key },
      );
      expectEnvelope(answer, 200);
      byPrice.push(...answer.body.data.map((ad: { adId: number }) => ad.adId));
    }
    const expected = [...all]
      .sort((a, b) => (b.price ?? Number.NEGATIVE_INFINITY) - (a.price ?? Number.NEGATIVE_INFINITY) || a.id - b.id)
      .map((ad) => ad.id);
    expect(byPrice).toEqual(expected);
  });

  it("every shard keeps its clients' event feed, each with its own cursor; an internal client names the shard it reads", async () => {
    const internal = await newClient({ internal: true, shard: 1 });
    const partner = await newClient({ partner: true, shard: 2 });
    const user = await createUser(partner.key);
    await activate(partner.key, user);
    const { userId } = user;
    const { adId } = await createAd(partner.key, userId);
    // Its publication writes events (publish.pending, publish.active) on shard 2.
    expectEnvelope(
      await call("POST", "/publish/", { key: partner.key, body: { userId, adId, portal: "website" } }),
      200,
    );
    await settledPublication(partner.key, userId, adId, "website");
    const feed = async (query: string, key = internal.key) => call("GET", `/events/?${query}`, { key });
    const namesAd = (events: { adId: number | null }[]) => events.some((event) => event.adId === adId);

    const own = await feed("after=0&limit=500");
    expectEnvelope(own, 200);
    expect(own.body).toMatchObject({ shard: 1, shards: [1, 2] });
    expect(namesAd(own.body.data)).toBe(false);
    const second = await feed("after=0&limit=500&shard=2");
    expect(second.body).toMatchObject({ shard: 2, shards: [1, 2] });
    expect(namesAd(second.body.data)).toBe(true);
    // A user's feed is read where the user lives, whatever shard is named.
    const ofUser = await feed(`after=0&userId=${userId}&shard=1`);
    expect(ofUser.body.shard).toBe(2);
    expect(namesAd(ofUser.body.data)).toBe(true);
    // The partner's own feed is its shard's; it names no shard, and its answer says nothing of shards.
    const partnerFeed = await feed("after=0", partner.key);
    expect(namesAd(partnerFeed.body.data)).toBe(true);
    expect(partnerFeed.body).not.toHaveProperty("shards");
    expectError(await feed("after=0&shard=2", partner.key), "internal_only");
    expectError(await feed("after=0&shard=3"), "validation_failed");
  });

  it("a shard that does not answer holds up no other shard's messages in a batch: only its own are retried", async () => {
    const shardDown = withDatabaseDown("DB_2");
    const settled: Record<number, string> = {};
    const message = (shard: number): Message<JobMessage> => ({
      id: String(shard),
      timestamp: new Date(),
      attempts: 1,
      body: { kind: "ping", shard },
      ack: () => {
        settled[shard] = "acked";
      },
      retry: () => {
        settled[shard] = "retried";
      },
    });
    await handleJobs(
      {
        queue: "jobs",
        messages: [message(1), message(2)],
        retryAll: () => {},
        ackAll: () => {},
      } as unknown as MessageBatch<JobMessage>,
      shardDown,
    );
    expect(settled).toEqual({ 1: "acked", 2: "retried" });
  });

  it("a directory that does not answer stops no job: each goes where its message says", async () => {
    const directoryDown = withDatabaseDown("DIRECTORY");
    let settled = "";
    // A job of a block no isolate has looked up: finding its shard asks the directory.
    const itemId = ID_BLOCK_SIZE * 400_000 + 7;
    await handleJobs(
      {
        queue: "jobs",
        messages: [
          {
            id: "1",
            timestamp: new Date(),
            attempts: 1,
            body: { kind: "publish", itemId, shard: 2 },
            ack: () => {
              settled = "acked";
            },
            retry: () => {
              settled = "retried";
            },
          },
        ],
        retryAll: () => {},
        ackAll: () => {},
      } as unknown as MessageBatch<JobMessage>,
      directoryDown,
    );
    expect(settled).toBe("acked");
  });

  it("a new client goes to the shard named, or to the emptiest; a shard without a binding is refused", async () => {
    const named = await newClient({ shard: 2 });
    expect(named.client.shard).toBe(2);
    const copy = async (d1: D1Database) =>
      d1.prepare("SELECT name FROM api_clients WHERE id = ?").bind(named.client.id).first();
    expect(await copy(env.DB_2)).toEqual({ name: named.client.name });
    expect(await copy(env.DB)).toBeNull();
    expect(
      await env.DB_2.prepare("SELECT shard FROM client_groups WHERE id = ?")
        .bind(await groupOf(named.client.id))
        .first(),
    ).toEqual({ shard: 2 });

    const sized = (bytes: number) => ({ prepare: () => ({ run: async () => ({ meta: { size_after: bytes } }) }) });
    const bySize = (one: number, two: number) =>
      shardForNewGroup({ ...env, DB: sized(one), DB_2: sized(two) } as unknown as Env);
    expect(await bySize(5_000, 4_000)).toBe(2);
    expect(await bySize(4_000, 5_000)).toBe(1);
    expect(await bySize(4_000, 4_000)).toBe(1);
    await expect(newClient({ shard: 3 })).rejects.toThrow("no shard 3: the shards are 1, 2");
  });
});

/** The group of a user's client, as its shard's copy says. */
async function groupOfUser(userId: number, d1: D1Database) {
  const row = await d1
    .prepare("SELECT c.group_id AS g FROM users u JOIN api_clients c ON c.id = u.client_id WHERE u.id = ?")
    .bind(userId)
    .first<{ g: number }>();
  return defined(row, `user ${userId}`).g;
}

/** How many blocks the directory leased to a group. */
async function blocksLeased(group: number) {
  return defined(
    await env.DIRECTORY.prepare("SELECT count(*) AS n FROM id_blocks WHERE group_id = ?")
      .bind(group)
      .first<{ n: number }>(),
  ).n;
}

/** The bindings with one D1 database not answering: every statement sent to it throws. */
function withDatabaseDown(binding: "DB_2" | "DIRECTORY"): Env {
  return {
    ...env,
    [binding]: new Proxy(env[binding], {
      get: (target, name) =>
        name === "prepare" || name === "batch"
          ? () => {
              throw new Error(`${binding} unreachable`);
            }
          : Reflect.get(target, name),
    }),
  } as Env;
}
