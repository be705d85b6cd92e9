import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { closeDeletedUsersConnections, replaceExpiredListings } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { type MarketplaceFault, marketplace } from "../fixtures/marketplace";
import { call, defined, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { CAR_CATEGORY, createAd, PAID_CATEGORY } from "../harness/data";
import { withoutMessages } from "../harness/jobs";
import { authorizeAccount, connectedSeller, walletBalance } from "../harness/marketplace";
import {
  checkInvariants,
  deliver,
  deliverAll,
  deliverTogether,
  endListing,
  Feature,
  Lock,
  type Model,
  newModel,
  newWorld,
  Publish,
  Reject,
  settle,
  Unpublish,
  type World,
} from "./marketplaceModel";

/**
 * Where our state meets the marketplace's: answers lost or wrong after the marketplace committed the
 * work. Each case switches a fault on at the simulator (commit, then 503, 422 or no answer), runs the
 * jobs through the held queue, and checks what the marketplace holds against what was paid and what
 * `/status/` says.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const PORTAL = "portal_a";
/** More than the queue's retries (5), so the last answer is lost too. */
const EVERY_ATTEMPT = 10;

const fault = (world: World, mode: MarketplaceFault, times = 1) =>
  marketplace(PORTAL).fault(world.account, mode, times);

/**
 * The command's job, sent once while the marketplace commits it and fails the answer (`mode`): the
 * queue keeps its message for a retry, which the caller delivers.
 */
async function sentOnceAmbiguously(world: World, model: Model, command: Publish | Feature, mode: MarketplaceFault) {
  await fault(world, mode);
  await command.run(model, world);
  const message = world.queue.at(-1) as NonNullable<(typeof world.queue)[number]>;
  expect(await deliver(world, message)).toBe(false);
  return message;
}

/** The newest message delivered until the queue gives up on it (5 tries), then dead-lettered. */
async function exhaustRetries(world: World) {
  const message = world.queue.pop();
  if (!message) throw new Error("no message to exhaust");
  for (let attempt = 0; attempt < 5; attempt += 1)
    expect(await deliver(world, message), `attempt ${attempt + 1} is retried`).toBe(false);
  expect(await deliver(world, message, "dlq")).toBe(true);
}

const newestJob = async (world: World) =>
  (await call("GET", `/jobs/?userId=${world.userId}`, { key: world.key })).body.data[0];
const publication = async (world: World, adId: number) =>
  (await call("GET", `/status/${world.userId}/${adId}`, { key: world.key })).body.data[0]?.portals.find(
    (p: { portal: string }) => p.portal === PORTAL,
  );

const remoteAdIdOf = async (world: World, adId: number): Promise<number> =>
  defined((await publication(world, adId))?.publish.remoteAdId);

async function liveAd(model: Model, world: World): Promise<number> {
  await new Publish(0).run(model, world);
  await deliverAll(world);
  const adId = world.adIds[0] as number;
  expect((await publication(world, adId))?.publish.active).toBe(true);
  return adId;
}

describe("after an ambiguous answer the marketplace is asked", () => {
  it("a feature bought but answered 503 until the retries ran out stays bought and paid", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await liveAd(model, world);
    await fault(world, "commit-then-503", EVERY_ATTEMPT);
    await new Feature(0).run(model, world);
    await exhaustRetries(world);
    const feature = await newestJob(world);
    expect(feature).toMatchObject({ kind: "feature", state: "done", refunded: false });
    expect((await marketplace(PORTAL).summary(world.account)).features).toBe(1);
    await checkInvariants(model, world);
  });

  it("a placement whose answer was lost, then the marketplace down until the retries ran out, is kept", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const message = await sentOnceAmbiguously(world, model, new Publish(0), "lost-answer");
    world.portalDown = true;
    for (let attempt = 1; attempt < 5; attempt += 1) expect(await deliver(world, message)).toBe(false);
    world.portalDown = false;
    world.queue.pop();
    expect(await deliver(world, message, "dlq")).toBe(true);
    const placement = await newestJob(world);
    expect(placement).toMatchObject({ kind: "placement", state: "done", refunded: false });
    expect((await publication(world, world.adIds[0] as number))?.publish.active).toBe(true);
    await checkInvariants(model, world);
  });

  it("a placement made but answered 422 is found and kept; the next publish is a free update", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await fault(world, "commit-then-422");
    const adId = await liveAd(model, world);
    expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "done", refunded: false });
    await new Publish(0).run(model, world);
    await deliverAll(world);
    expect(await newestJob(world)).toMatchObject({ kind: "update", state: "done", cost: 0 });
    const held = await marketplace(PORTAL).listings(world.account);
    expect(held.filter((l) => l.externalRef.startsWith(`ad-${adId}-`))).toHaveLength(1);
    await checkInvariants(model, world);
  });

  it("a placement the marketplace really refused fails and is refunded", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Reject(0, true).run(model, world);
    await new Publish(0).run(model, world);
    await deliverAll(world);
    expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "error", refunded: true });
    await checkInvariants(model, world);
  });

  for (const [mode, times] of [
    ["commit-then-422", 1],
    ["commit-then-503", EVERY_ATTEMPT],
  ] as const) {
    it(`an unpublish done but answered ${mode.slice(12)} ends the listing; the next publish places it again`, async () => {
      const world = await newWorld(key, internalKey);
      const model = newModel();
      const adId = await liveAd(model, world);
      await fault(world, mode, times);
      await new Unpublish(0).run(model, world);
      if (times > 1) await exhaustRetries(world);
      else await deliverAll(world);
      expect(await newestJob(world)).toMatchObject({ kind: "unpublish", state: "done" });
      expect((await publication(world, adId))?.publish.active).toBe(false);
      await new Publish(0).run(model, world);
      await deliverAll(world);
      expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "done", cost: world.placementPrice });
      expect((await publication(world, adId))?.publish.active).toBe(true);
      await settle(world);
      await checkInvariants(model, world);
    });
  }

  it("a dead letter while the marketplace cannot be asked stays pending, and settles once it can", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await liveAd(model, world);
    await fault(world, "commit-then-503", EVERY_ATTEMPT);
    await new Feature(0).run(model, world);
    const message = world.queue.at(-1);
    for (let attempt = 0; attempt < 5; attempt += 1) await deliver(world, message as NonNullable<typeof message>);
    world.portalDown = true;
    expect(await deliver(world, message as NonNullable<typeof message>, "dlq")).toBe(true);
    world.queue.pop();
    expect(await newestJob(world)).toMatchObject({ kind: "feature", state: "pending", refunded: false });
    await settle(world);
    expect(await newestJob(world)).toMatchObject({ kind: "feature", state: "done", refunded: false });
    await checkInvariants(model, world);
  });
});

describe("one token refresh per connection at a time", () => {
  for (const expiredWhere of ["in our records", "only at the marketplace"] as const) {
    it(`eight updates of one seller in one batch after the token expired ${expiredWhere} all run; the connection stays`, async () => {
      const world = await newWorld(key, internalKey);
      const model = newModel();
      for (let i = world.adIds.length; i < 8; i += 1)
        world.adIds.push(
          (await createAd(key, world.userId, { categoryId: PAID_CATEGORY, title: `Brommer ${i}` })).adId,
        );
      const body = { userId: world.userId, adId: world.adIds, portal: PORTAL };
      const placed = await call("POST", "/publish/batch", { key, body, env: world.env });
      expect(placed.body.result, JSON.stringify(placed.body)).toBe(true);
      await deliverAll(world);
      await marketplace(PORTAL).expireTokens();
      if (expiredWhere === "in our records")
        await env.DB.prepare(
          "UPDATE portal_connections SET access_token_expire = '2026-01-01T00:00:00.000Z' WHERE user_id = ?",
        )
          .bind(world.userId)
          .run();
      const updated = await call("PUT", "/publish/batch", { key, body, env: world.env });
      expect(updated.body.result, JSON.stringify(updated.body)).toBe(true);
      const messages = world.queue.splice(0);
      expect(messages).toHaveLength(8);
      expect(await deliverTogether(world, messages)).toEqual(messages.map(() => true));
      const jobs = (await call("GET", `/jobs/?userId=${world.userId}&kind=update`, { key })).body.data;
      expect(jobs.map((j: { state: string }) => j.state)).toEqual(messages.map(() => "done"));
      const connection = await call("GET", `/oauth/${world.userId}/${PORTAL}/`, { key });
      expect(connection.body.data).toMatchObject({ status: true, externalUserId: world.account });
      const expired = await env.DB.prepare(
        "SELECT count(*) AS n FROM events WHERE type = 'connection.expired' AND user_id = ?",
      )
        .bind(world.userId)
        .first<{ n: number }>();
      expect(expired?.n).toBe(0);
      await checkInvariants(model, world);
    });
  }

  it("a refresh token the marketplace really refuses ends the connection once", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await liveAd(model, world);
    await env.DB.prepare(
      "UPDATE portal_connections SET access_token_expire = '2026-01-01T00:00:00.000Z', refresh_token = ? WHERE user_id = ?",
    )
      .bind(
        (
          await env.DB.prepare("SELECT access_token FROM portal_connections WHERE user_id = ?")
            .bind(world.userId)
            .first<{ access_token: string }>()
        )?.access_token,
        world.userId,
      )
      .run();
    await call("PUT", "/publish/", {
      key,
      body: { userId: world.userId, adId: world.adIds[0], portal: PORTAL },
      env: world.env,
    });
    await deliverAll(world);
    expect(await newestJob(world)).toMatchObject({ kind: "update", state: "error" });
    const connection = await call("GET", `/oauth/${world.userId}/${PORTAL}/`, { key });
    expect(connection.body.data.status).toBe(false);
  });
});

describe("features belong to a listing", () => {
  it("an unpublish ends the listing's features, and a new placement starts with none", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    await new Feature(0).run(model, world);
    await deliverAll(world);
    const featureShown = async () => ({
      status: ((await publication(world, adId))?.features ?? []) as { active: boolean }[],
      offers: (await call("GET", `/features/${PORTAL}/${adId}`, { key })).body.data as { active: boolean }[],
    });
    const active = (shown: { active: boolean }[]) => shown.filter((f) => f.active).length;
    const bought = await featureShown();
    expect(active(bought.status), JSON.stringify(bought)).toBe(1);
    expect(active(bought.offers), JSON.stringify(bought)).toBe(1);
    await new Unpublish(0).run(model, world);
    await deliverAll(world);
    const afterUnpublish = await featureShown();
    expect(active(afterUnpublish.status), JSON.stringify(afterUnpublish)).toBe(0);
    expect(active(afterUnpublish.offers), JSON.stringify(afterUnpublish)).toBe(0);
    await new Publish(0).run(model, world);
    await deliverAll(world);
    expect((await publication(world, adId))?.publish.active).toBe(true);
    const afterPlacement = await featureShown();
    expect(active(afterPlacement.status), JSON.stringify(afterPlacement)).toBe(0);
    expect(active(afterPlacement.offers), JSON.stringify(afterPlacement)).toBe(0);
    await checkInvariants(model, world);
  });
});

describe("scheduled charges make the checks of a fresh publish", () => {
  for (const seller of ["locked", "active"] as const) {
    it(`autoreplace of an ended listing ${seller === "locked" ? "neither charges nor places again for a locked seller" : "places an active seller's listing again, paid"}`, async () => {
      const world = await newWorld(key, internalKey);
      const model = newModel();
      const adId = await liveAd(model, world);
      const settings = await call("POST", "/adsettings/", {
        key,
        body: { adId, settings: [{ portal: PORTAL, autoreplace: true }] },
      });
      expect(settings.status, JSON.stringify(settings.body)).toBe(200);
      await endListing(model, world, adId, await remoteAdIdOf(world, adId));
      if (seller === "locked") await new Lock(true).run(model, world);
      const { replaced } = await replaceExpiredListings(jobContext(world.env), { limit: 50 });
      await deliverAll(world);
      const placements = (await call("GET", `/jobs/?userId=${world.userId}&kind=placement`, { key })).body.data;
      expect(replaced).toBe(seller === "locked" ? 0 : 1);
      expect(placements).toHaveLength(seller === "locked" ? 1 : 2);
      expect((await publication(world, adId))?.publish.active).toBe(seller === "active");
      await checkInvariants(model, world);
    });
  }
});

describe("a listing past its close date", () => {
  it("is not brought back by an update sent after it ended; a publish then places it anew, paid", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    const ended = await remoteAdIdOf(world, adId);
    // Publishing a live ad queues a free update, which is sent only after the listing ended.
    await new Publish(0).run(model, world);
    await endListing(model, world, adId, ended);
    await deliverAll(world);
    expect(await newestJob(world)).toMatchObject({ kind: "update", state: "error", cost: 0 });
    // Publishing it now is a placement, charged as a first one, which makes a new listing.
    await new Publish(0).run(model, world);
    expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "pending", cost: world.placementPrice });
    await deliverAll(world);
    expect((await publication(world, adId))?.publish.active).toBe(true);
    expect(await remoteAdIdOf(world, adId)).not.toBe(ended);
    await checkInvariants(model, world);
  });
});

describe("autoreplace waits for a feature that may be bought", () => {
  it("a listing ending while its feature's answer was lost is replaced only after the purchase settled, kept and paid", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    await call("POST", "/adsettings/", { key, body: { adId, settings: [{ portal: PORTAL, autoreplace: true }] } });
    await sentOnceAmbiguously(world, model, new Feature(0), "lost-answer");
    // The marketplace ends the listing at its close date, before the purchase's retry.
    await endListing(model, world, adId, await remoteAdIdOf(world, adId));
    const clock = new Date();
    expect((await replaceExpiredListings({ ...jobContext(world.env), now: clock }, { limit: 50 })).replaced).toBe(0);
    await deliverAll(world);
    expect(await newestJob(world)).toMatchObject({ kind: "feature", state: "done", refunded: false });
    expect((await replaceExpiredListings({ ...jobContext(world.env), now: clock }, { limit: 50 })).replaced).toBe(1);
    await deliverAll(world);
    expect((await publication(world, adId))?.publish.active).toBe(true);
    await checkInvariants(model, world);
  });
});

describe("batches keep the single call's rules", () => {
  /** A seller with `credit` cents and two ads: a car (595 to place on portal_a) and a brommer (295). */
  async function carAndBrommer(credit: number) {
    const userId = await connectedSeller(key, internalKey, credit);
    const car = (await createAd(key, userId, { categoryId: CAR_CATEGORY, title: "Volkswagen Golf" })).adId as number;
    const brommer = (await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer Vespa" })).adId as number;
    return { userId, car, brommer };
  }

  it("takes ads in order while funds last: a 595 refused on 400 does not refuse the 295 after it, and the amounts stay true", async () => {
    const { userId, car, brommer } = await carAndBrommer(400);
    const answer = await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: [car, brommer], portal: PORTAL },
      env: withoutMessages(),
    });
    expect(answer.status).toBe(200);
    const [carOutcome, brommerOutcome] = answer.body.data;
    expect(carOutcome?.result).toBe(false);
    expect(carOutcome?.errorDetails[0]).toMatchObject({
      code: "insufficient_means",
      amounts: { price: 595, balance: 105 },
    });
    expect(brommerOutcome).toMatchObject({ adId: brommer, result: true });
    expect(await walletBalance(key, userId)).toBe(105);
  });

  it("a batch refused for funds frees its Idempotency-Key: after a top-up the same request runs anew", async () => {
    const { userId, car, brommer } = await carAndBrommer(400);
    const request = {
      key,
      body: { userId, adId: [car, brommer], portal: PORTAL },
      headers: { "Idempotency-Key": `batch-funds-${userId}` },
      env: withoutMessages(),
    };
    const first = await call("POST", "/publish/batch", request);
    expect(first.body.data[0]?.result).toBe(false);
    await call("POST", "/wallet/", { key: internalKey, body: { userId, amount: 1000, description: "storting" } });
    const again = await call("POST", "/publish/batch", request);
    expect(again.headers.get("Idempotent-Replayed")).toBeNull();
    expect(again.body.data.map((o: { result: boolean }) => o.result)).toEqual([true, true]);
    // Both ads are now queued: a third call is a repeat (the same jobs), kept and replayed as such.
    const third = await call("POST", "/publish/batch", request);
    expect(third.headers.get("Idempotent-Replayed")).toBe("true");
    expect(third.body).toEqual(again.body);
    expect(await walletBalance(key, userId)).toBe(1400 - 595 - 295);
  });
});

describe("deleting follows the contract without losing money or requests", () => {
  const balance = (world: World) => walletBalance(key, world.userId);
  const jobsOf = async (world: World, asKey = key) =>
    (await call("GET", `/jobs/?userId=${world.userId}`, { key: asKey })).body.data as {
      queueItemId: number;
      kind: string;
      state: string;
      refunded: boolean;
      remoteAdId: number | null;
    }[];

  it("features not yet sent are cancelled and refunded when their ad is deleted, and still shown", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    const before = await balance(world);
    for (const feature of ["omhoogplaatsen", "dagtopper", "url"]) {
      const bought = await call("POST", "/features/", { key, body: { adId, portal: PORTAL, feature }, env: world.env });
      expect(bought.status, JSON.stringify(bought.body)).toBe(200);
    }
    expect(await balance(world)).toBeLessThan(before);
    expect((await call("DELETE", `/ads/${adId}`, { key })).status).toBe(200);
    model.deletedAds.add(adId);
    expect(await balance(world)).toBe(before);
    const features = (await jobsOf(world)).filter((j) => j.kind === "feature");
    expect(features.map((j) => [j.state, j.refunded])).toEqual(features.map(() => ["cancelled", true]));
    await settle(world);
    expect((await marketplace(PORTAL).summary(world.account)).features).toBe(0);
    await checkInvariants(model, world);
  });

  it("placements of a batch not yet sent are cancelled and refunded by DELETE /ads/batch/", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const before = await balance(world);
    const placed = await call("POST", "/publish/batch", {
      key,
      body: { userId: world.userId, adId: world.adIds, portal: PORTAL },
      env: world.env,
    });
    expect(placed.body.result, JSON.stringify(placed.body)).toBe(true);
    expect(await balance(world)).toBe(before - 2 * world.placementPrice);
    const deleted = await call("DELETE", "/ads/batch/", { key, body: { userId: world.userId, adId: world.adIds } });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    for (const adId of world.adIds) model.deletedAds.add(adId);
    expect(await balance(world)).toBe(before);
    expect((await jobsOf(world)).map((j) => [j.kind, j.state, j.refunded])).toEqual([
      ["placement", "cancelled", true],
      ["placement", "cancelled", true],
    ]);
    await settle(world);
    expect((await marketplace(PORTAL).summary(world.account)).listings).toBe(0);
    await checkInvariants(model, world);
  });

  it("an unpublish asked for before the delete still takes the listing down", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    await new Unpublish(0).run(model, world);
    expect((await call("DELETE", `/ads/${adId}`, { key })).status).toBe(200);
    model.deletedAds.add(adId);
    await deliverAll(world);
    const [unpublish] = await jobsOf(world);
    expect(unpublish).toMatchObject({ kind: "unpublish", state: "done" });
    expect((await marketplace(PORTAL).summary(world.account)).online).toBe(0);
    await checkInvariants(model, world);
  });

  it("a placement already at the marketplace completes after its ad is deleted, charged, its listing known to the job", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    const adId = world.adIds[0] as number;
    world.batchesBeforeCrash = 1;
    expect(await deliver(world, world.queue[0] as NonNullable<(typeof world.queue)[number]>)).toBe(false);
    world.batchesBeforeCrash = null;
    expect((await call("DELETE", `/ads/${adId}`, { key })).status).toBe(200);
    model.deletedAds.add(adId);
    await settle(world);
    const [placement] = await jobsOf(world);
    const [listing] = await marketplace(PORTAL).listings(world.account);
    expect(placement).toMatchObject({
      kind: "placement",
      state: "done",
      refunded: false,
      remoteAdId: listing?.remoteAdId,
    });
    expect(listing?.online).toBe(true);
    await checkInvariants(model, world);
  });

  it("deleting the user cancels what never started, runs an unpublish asked for before, and the internal client sees the refunds", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await liveAd(model, world);
    await new Unpublish(0).run(model, world);
    await new Publish(1).run(model, world);
    const deleted = await call("DELETE", `/users/${world.userId}`, { key });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    model.userDeleted = true;
    await deliverAll(world);
    const jobs = await jobsOf(world, internalKey);
    expect(jobs.map((j) => [j.kind, j.state, j.refunded])).toEqual([
      ["placement", "cancelled", true],
      ["unpublish", "done", false],
      ["placement", "done", false],
    ]);
    expect((await marketplace(PORTAL).summary(world.account)).online).toBe(0);
    // The connection stayed for the unpublish; with no job open, the cron closes it.
    await closeDeletedUsersConnections(jobContext(onTestShard()), { limit: 50 });
    const left = await env.DB.prepare("SELECT count(*) AS n FROM portal_connections WHERE user_id = ?")
      .bind(world.userId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
    expect((await call("GET", `/jobs/?userId=${world.userId}`, { key })).status).toBe(404);
    await checkInvariants(model, world);
  });
});

describe("listings stay bound to the account that holds them", () => {
  it("a reconnect to another account is refused while listings are live at the first; after they are taken down it is not", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    const first = world.account;
    const refused = await authorizeAccount(key, world.userId, PORTAL);
    expect(refused.answer.status, JSON.stringify(refused.answer.body)).toBe(409);
    expect(refused.answer.body.errorDetails?.[0]).toMatchObject({ code: "portal_account_has_listings" });
    expect(refused.answer.body.errors[0]).toContain(`account ${first}`);
    // Back to the first account, the listing is taken down there, then the other account is connected.
    const back = await authorizeAccount(key, world.userId, PORTAL, world.credentials.get(first));
    expect(back.answer.status, JSON.stringify(back.answer.body)).toBe(200);
    await new Unpublish(0).run(model, world);
    await deliverAll(world);
    expect((await marketplace(PORTAL).summary(first)).online).toBe(0);
    const other = await authorizeAccount(key, world.userId, PORTAL, refused.credentials);
    expect(other.answer.status, JSON.stringify(other.answer.body)).toBe(200);
    world.account = other.answer.body.data.externalUserId;
    world.accounts.push(world.account);
    await new Publish(0).run(model, world);
    await deliverAll(world);
    expect((await marketplace(PORTAL).summary(world.account)).online).toBe(1);
    expect((await publication(world, adId))?.publish.active).toBe(true);
    await checkInvariants(model, world);
  });

  it("a refused reconnect leaves the seller connected: a placement answered 503 completes, unrefunded", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await sentOnceAmbiguously(world, model, new Publish(0), "commit-then-503");
    // A reconnect to another account is refused (a started job may be at the first); the first stays.
    const refused = await authorizeAccount(key, world.userId, PORTAL);
    expect(refused.answer.status, JSON.stringify(refused.answer.body)).toBe(409);
    expect((await call("GET", `/oauth/${world.userId}/${PORTAL}/`, { key })).body.data).toMatchObject({
      status: true,
      externalUserId: world.account,
    });
    await settle(world);
    expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "done", refunded: false });
    await checkInvariants(model, world);
  });

  it("a placement that may be at the marketplace waits, unrefunded, while the seller is disconnected", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const message = await sentOnceAmbiguously(world, model, new Publish(0), "commit-then-503");
    const first = world.account;
    expect((await call("DELETE", `/oauth/${world.userId}/${PORTAL}/`, { key })).status).toBe(200);
    // The job waits (for the cron's re-send, not on the queue): its deliveries are acknowledged.
    for (let attempt = 0; attempt < 2; attempt += 1) expect(await deliver(world, message)).toBe(true);
    expect(await deliver(world, message, "dlq")).toBe(true);
    expect(await newestJob(world)).toMatchObject({
      kind: "placement",
      state: "pending",
      refunded: false,
      waitingSince: expect.any(String),
    });
    const back = await authorizeAccount(key, world.userId, PORTAL, world.credentials.get(first));
    expect(back.answer.status, JSON.stringify(back.answer.body)).toBe(200);
    await settle(world);
    expect(await newestJob(world)).toMatchObject({ kind: "placement", state: "done", refunded: false });
    await checkInvariants(model, world);
  });

  it("a job never acts on a listing through another account's connection", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const adId = await liveAd(model, world);
    // A listing placed before listings knew their account, its user since connected elsewhere.
    await env.DB.prepare("UPDATE ad_publications SET remote_account_id = NULL WHERE ad_id = ?").bind(adId).run();
    const other = await authorizeAccount(key, world.userId, PORTAL);
    expect(other.answer.status).toBe(200);
    await env.DB.prepare("UPDATE ad_publications SET remote_account_id = ? WHERE ad_id = ?")
      .bind(world.account, adId)
      .run();
    await new Unpublish(0).run(model, world);
    await deliverAll(world);
    const [unpublish] = (await call("GET", `/jobs/?userId=${world.userId}&kind=unpublish`, { key })).body.data;
    expect(unpublish).toMatchObject({ state: "error" });
    expect(unpublish?.lastError).toContain(`account ${world.account}`);
    expect((await marketplace(PORTAL).summary(world.account)).online).toBe(1);
    expect((await publication(world, adId))?.publish.active).toBe(true);
    await checkInvariants(model, world);
  });
});
