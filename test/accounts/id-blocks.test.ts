// Ids that route (src/db/ids.ts): every id is issued from a block leased to its owner's client group, so
// the id alone names the group; no id comes back; a full block leads to the next; a group's ties stay in it.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ID_BLOCK_SIZE, ID_BLOCK_SLACK } from "../../src/db/ids";
import { receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { call, eventually, expectEnvelope, expectError, groupOf, newClient, twoClients } from "../harness/api";
import { contactBody, createAd, createUser, manufacturerBody, PAID_CATEGORY } from "../harness/data";
import { sellerImages } from "../harness/images";
import { connectedSeller, listingsAtMarketplace } from "../harness/marketplace";
import { clientTasks, cronAt } from "../harness/tasks";

/** The block's group of an id of `kind`. */
const blockGroup = async (kind: string, id: number) =>
  (
    await env.DB.prepare("SELECT group_id AS g FROM id_blocks WHERE kind = ? AND block = ?")
      .bind(kind, Math.floor(id / ID_BLOCK_SIZE))
      .first<{ g: number }>()
  )?.g;

// Each table's owner, as the group its rows belong to (`t` is the row).
const ofClient = (client: string) => `coalesce((SELECT group_id FROM api_clients WHERE id = ${client}), 1)`;
const ofUser = (user: string) => ofClient(`(SELECT client_id FROM users WHERE id = ${user})`);
const ofAd = (ad: string) => ofUser(`(SELECT user_id FROM ads WHERE id = ${ad})`);
const OWNER: Record<string, string> = {
  users: ofClient("t.client_id"),
  contacts: ofUser("t.user_id"),
  folders: ofUser("t.user_id"),
  manufacturers: ofUser("t.user_id"),
  ads: ofUser("t.user_id"),
  image_jobs: ofUser("t.user_id"),
  queue_items: ofUser("t.user_id"),
  tasks: ofUser("t.user_id"),
  notifications: ofUser("t.user_id"),
  wallet_entries: ofUser("t.user_id"),
  task_runs: ofUser("(SELECT user_id FROM tasks WHERE id = t.task_id)"),
  ad_images: ofAd("t.ad_id"),
  bids: ofAd("t.ad_id"),
  ad_update_requests: ofAd("t.ad_id"),
  webhook_endpoints: ofClient("t.client_id"),
  syncs: ofUser("t.user_id"),
  feeds: ofUser("t.user_id"),
};

/** Every row of every table with ids: its id's block group against its owner's group. */
async function sweep() {
  const tables: Record<string, { rows: number; astray: { id: number; owner: number; block: number | null }[] }> = {};
  for (const [kind, owner] of Object.entries(OWNER)) {
    const { results } = await env.DB.prepare(
      `SELECT t.id AS id, ${owner} AS owner, b.group_id AS block
       FROM ${kind} t LEFT JOIN id_blocks b ON b.kind = '${kind}' AND b.block = t.id / ${ID_BLOCK_SIZE}`,
    ).all<{ id: number; owner: number; block: number | null }>();
    tables[kind] = { rows: results.length, astray: results.filter((row) => row.owner !== row.block) };
  }
  return tables;
}

/** A client's life in calls: users, an address book, ads with images, paid placements, a task, webhooks. */
async function liveAClientsLife(key: string, internalKey: string) {
  const { url, name } = receiver("ok");
  await registerWebhook(key, url);
  const { sellerWithAds, task } = clientTasks(key, internalKey);
  const { userId, adIds } = await sellerWithAds(2);
  expectEnvelope(await call("POST", "/contacts/", { key, body: contactBody(userId) }), 200);
  expectEnvelope(await call("POST", "/folders/", { key, body: { userId, description: "Showroom" } }), 200);
  expectEnvelope(await call("POST", "/manufacturers/", { key, body: manufacturerBody(userId) }), 200);
  await sellerImages(key, userId).adWithImages("red.png");
  await task(userId, { time: "10:00" });
  expectEnvelope(
    await call("POST", "/feeds/", {
      key,
      body: {
        userId,
        url: "https://erp.example.com/stock.csv",
        format: "csv",
        schedule: { every: "hourly", minute: 0 },
      },
    }),
    200,
  );
  await cronAt("2026-12-01T09:00:00.000Z");
  // A stock that would end the seller's ads: refused, its sync's row kept (refused).
  const stock = [
    {
      externalAdId: 1,
      categoryId: PAID_CATEGORY,
      title: "Brommer uit de voorraad",
      description: "Nette brommer.",
      price: { model: "fixed", price: 1000 },
    },
  ];
  expectError(
    await call("POST", `/syncs/?userId=${userId}`, { key, body: { items: stock } }),
    "sync_would_end_too_many",
  );
  const gone = await createAd(key, userId, { title: "Weg ermee" });
  expectEnvelope(await call("DELETE", `/ads/${gone.adId}`, { key }), 200);
  await eventually(async () => ((await receivedBy(name)).length > 0 ? true : undefined), "a webhook delivery");
  return { userId, adIds };
}

describe("ids that route", () => {
  it("every row two clients' calls write has its id from a block of its owner's group", async () => {
    const internal = await newClient({ internal: true });
    const [a, b] = [await newClient({ partner: true }), await newClient({ partner: true })];
    const [groupA, groupB] = [await groupOf(a.client.id), await groupOf(b.client.id)];
    expect(groupA).not.toBe(groupB);
    // A new group holds a block of every table from its creation on.
    const leased = await env.DB.prepare("SELECT count(*) AS n FROM id_blocks WHERE group_id = ?").bind(groupA).first();
    expect(leased?.n).toBe(17);
    const [lifeA, lifeB] = await Promise.all([
      liveAClientsLife(a.key, internal.key),
      liveAClientsLife(b.key, internal.key),
    ]);
    expect(await blockGroup("users", lifeA.userId)).toBe(groupA);
    expect(await blockGroup("users", lifeB.userId)).toBe(groupB);
    for (const adId of lifeA.adIds) expect(await blockGroup("ads", adId)).toBe(groupA);
    for (const adId of lifeB.adIds) expect(await blockGroup("ads", adId)).toBe(groupB);

    const tables = await sweep();
    for (const [kind, { astray }] of Object.entries(tables)) expect(astray, kind).toEqual([]);
    // What the two lives wrote, so that the sweep above looked at rows of every kind they make.
    const written = [
      "users",
      "contacts",
      "folders",
      "manufacturers",
      "ads",
      "image_jobs",
      "ad_images",
      "queue_items",
      "wallet_entries",
      "tasks",
      "task_runs",
      "webhook_endpoints",
      "syncs",
      "feeds",
    ];
    for (const kind of written) expect(tables[kind]?.rows, kind).toBeGreaterThan(0);
  });

  it("a full block leads to a new block of the same group, and no id repeats", async () => {
    const { key, client } = await newClient({ partner: true });
    const group = await groupOf(client.id);
    const userId = (await createUser(key)).userId as number;
    const first = (await createAd(key, userId)).adId as number;
    const block = Math.floor(first / ID_BLOCK_SIZE);
    // The block as if all but one of the ids it issues had been issued (its last ID_BLOCK_SLACK are kept free).
    const lastIssued = (block + 1) * ID_BLOCK_SIZE - ID_BLOCK_SLACK;
    await env.DB.prepare("UPDATE id_blocks SET deleted_high = ? WHERE kind = 'ads' AND block = ?")
      .bind(lastIssued - 1, block)
      .run();
    const ids: number[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await createAd(key, userId, { externalAdId: 900 + i })).adId as number);
    expect(ids[0]).toBe(lastIssued);
    expect(Math.floor((ids[1] as number) / ID_BLOCK_SIZE)).toBeGreaterThan(block);
    expect(ids[2]).toBe((ids[1] as number) + 1);
    expect(await blockGroup("ads", ids[1] as number)).toBe(group);
    expect(new Set([first, ...ids]).size).toBe(4);
    for (const id of ids) expect(id).toBeLessThan(2 ** 31);
  });

  it("a batch of paid placements at a full block of jobs: each job in the new block, charged once", async () => {
    const { key, internalKey } = await twoClients();
    const userId = await connectedSeller(key, internalKey, 100_000);
    const adIds: number[] = [];
    for (let i = 0; i < 5; i += 1)
      adIds.push((await createAd(key, userId, { categoryId: PAID_CATEGORY, externalAdId: 700 + i })).adId);
    const group = await groupOf((await call("GET", "/client/", { key })).body.data.clientId);
    // The group's blocks of jobs and ledger entries as if all but three of the ids they issue were issued.
    for (const kind of ["queue_items", "wallet_entries"])
      await env.DB.prepare(
        `UPDATE id_blocks SET deleted_high = (block + 1) * ${ID_BLOCK_SIZE} - ${ID_BLOCK_SLACK} - 3
         WHERE kind = ? AND group_id = ? AND block = (SELECT max(block) FROM id_blocks WHERE kind = ? AND group_id = ?)`,
      )
        .bind(kind, group, kind, group)
        .run();
    const placed = await call("POST", "/publish/batch", { key, body: { userId, adId: adIds, portal: "portal_a" } });
    expectEnvelope(placed, 200);
    const { results: jobs } = await env.DB.prepare(
      `SELECT q.id, (SELECT count(*) FROM wallet_entries w WHERE w.queue_item_id = q.id AND w.kind = 'charge') AS charges
       FROM queue_items q WHERE q.user_id = ?`,
    )
      .bind(userId)
      .all<{ id: number; charges: number }>();
    expect(jobs).toHaveLength(5);
    for (const job of jobs) {
      expect(job.charges).toBe(1);
      expect(await blockGroup("queue_items", job.id)).toBe(group);
    }
    expect(new Set(jobs.map((job) => Math.floor(job.id / ID_BLOCK_SIZE))).size).toBe(1);
    await eventually(
      async () => ((await listingsAtMarketplace(key, userId)).length === 5 ? true : undefined),
      "5 listings",
    );
  });

  it("a block is leased past every id of its table, one written without a block's id included", async () => {
    const { key, client } = await newClient({ partner: true });
    const userId = (await createUser(key)).userId as number;
    const newest = (await env.DB.prepare("SELECT max(id) AS id FROM ads").first<{ id: number }>())?.id ?? 0;
    // An ad written straight three blocks on, as a seed or the bench writes them, with no block of its own.
    const stray = (Math.floor(newest / ID_BLOCK_SIZE) + 3) * ID_BLOCK_SIZE + 10;
    await env.DB.prepare(
      `INSERT INTO ads (id, user_id, title, description, category_id, price_model, price, status)
       VALUES (?, ?, 'Los geschreven', 'Los', 9301, 'fixed', 1, 'active')`,
    )
      .bind(stray, userId)
      .run();
    await env.DB.prepare(
      `UPDATE id_blocks SET deleted_high = (block + 1) * ${ID_BLOCK_SIZE} - 1
       WHERE kind = 'ads' AND group_id = ? AND block = (SELECT max(block) FROM id_blocks WHERE kind = 'ads' AND group_id = ?)`,
    )
      .bind(await groupOf(client.id), await groupOf(client.id))
      .run();
    const ad = (await createAd(key, userId)).adId as number;
    expect(Math.floor(ad / ID_BLOCK_SIZE)).toBeGreaterThan(Math.floor(stray / ID_BLOCK_SIZE));
    expect(await blockGroup("ads", ad)).toBe(await groupOf(client.id));
  });

  it("an id deleted while it was the newest is never issued again", async () => {
    const { key } = await newClient({ partner: true });
    const userId = (await createUser(key)).userId as number;
    const ad = (await createAd(key, userId)).adId as number;
    expectEnvelope(await call("DELETE", `/ads/${ad}`, { key }), 200);
    const next = (await createAd(key, userId)).adId as number;
    expect(next).toBeGreaterThan(ad);
  });

  it("a user moves to a client of its own group only; a payer is of the seller's group", async () => {
    const internal = await newClient({ internal: true });
    const a = await newClient({ partner: true });
    const sameGroup = await newClient({ partner: true, groupId: await groupOf(a.client.id) });
    const other = await newClient({ partner: true });
    const user = (await createUser(a.key)).userId as number;
    const payerElsewhere = (await createUser(other.key)).userId as number;

    const moved = await call("PUT", "/users/", {
      key: internal.key,
      body: { userId: user, clientId: other.client.id },
    });
    expectError(moved, "client_group_mismatch");
    expect(moved.body.errors[0]).toContain("clientId");
    // No client is group 1's.
    const unowned = await call("PUT", "/users/", { key: internal.key, body: { userId: user, clientId: null } });
    expectError(unowned, "client_group_mismatch");
    const settings = await call("POST", "/user/settings/", {
      key: internal.key,
      body: { userId: user, walletUserId: payerElsewhere },
    });
    expectError(settings, "client_group_mismatch");
    expect(settings.body.errors[0]).toContain("walletUserId");

    expectEnvelope(
      await call("PUT", "/users/", { key: internal.key, body: { userId: user, clientId: sameGroup.client.id } }),
      200,
    );
    const payer = (await createUser(sameGroup.key)).userId as number;
    expectEnvelope(
      await call("POST", "/user/settings/", { key: internal.key, body: { userId: user, walletUserId: payer } }),
      200,
    );
  });
});
