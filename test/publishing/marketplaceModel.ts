import { env } from "cloudflare:test";
import fc from "fast-check";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { advanceMove, beginMove, groupHoldings } from "../../src/db/moves";
import { onShard, shardDatabase } from "../../src/db/shards";
import type { Env, ShardEnv } from "../../src/env";
import { executeJobs } from "../../src/jobs/execute";
import { marketplaceSimulator } from "../../src/portals/gateway";
import { forgetGroupRoutes } from "../../src/services/accounts/groupMoves";
import { loadCatalogue } from "../../src/services/catalogue";
import { featurePrice, placingPrice } from "../../src/services/catalogue/features";
import {
  replaceExpiredListings,
  resendJobsCutByMove,
  resendStalledJobs,
  WAIT_BOUND_MS,
} from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import type { JobMessage, PublishMessage } from "../../src/services/shared/jobMessages";
import { type MarketplaceFault, marketplace } from "../fixtures/marketplace";
import { type Answer, call } from "../harness/api";
import { interceptD1 } from "../harness/d1";
import { createAd, createUser, PAID_CATEGORY } from "../harness/data";
import { authorizeAccount, connectedSellerAccount, type MarketplaceCredentials } from "../harness/marketplace";

/**
 * A model-based test of publishing and its money. Each run is a fresh seller with two paid ads, an API
 * whose queue is held by the test (messages are delivered, redelivered, lost or dead-lettered when a
 * command says so), a consumer that can be killed between its marketplace call and its writes, a
 * marketplace that can go down, and commands that race with their D1 round trips interleaved by
 * fast-check's scheduler. After every run the queue is drained and the invariants are checked against
 * what the marketplace simulator holds. A run's seller and payer live on one shard (src/db/shards.ts), and
 * their client group moves to the other shard when a command says so (src/db/moves/), top-ups with an
 * Idempotency-Key and their repeats in between.
 */

const FEATURE = "omhoogplaatsen";
const PORTAL = "portal_a";

export interface Message {
  body: PublishMessage;
  attempts: number;
}

/** What the test holds and drives for one run. */
export interface World {
  key: string;
  internalKey: string;
  userId: number;
  /** The user whose wallet pays for the seller (the seller's own unless the run has a payer). */
  payerId: number;
  /** The marketplace account the seller is connected to now, and every one it was. */
  account: number;
  accounts: number[];
  /** How to sign in to each of those accounts. */
  credentials: Map<number, MarketplaceCredentials>;
  adIds: number[];
  placementPrice: number;
  featurePrice: number;
  /** The messages sent and not yet acknowledged, oldest first. */
  queue: Message[];
  env: ShardEnv;
  /** The seller's client group, its shard (src/db/shards.ts), and its database as the test reads it (not intercepted). */
  group: number;
  shard: number;
  db: D1Database;
  /** The bindings the API and the consumer run with (every shard's database intercepted). */
  bindings: Env;
  /** The internal client's keyed top-ups: each key once, whatever its repeats. */
  topUps: { key: string; amount: number }[];
  /** The run's scheduler; `active` while a race hands it the D1 round trips. */
  scheduler: fc.Scheduler | null;
  racing: boolean;
  portalDown: boolean;
  /** Batches left before the consumer's process dies (null: it lives). */
  batchesBeforeCrash: number | null;
  /** Messages sent while this is set are lost (the request died after its writes, before its send). */
  losingSends: boolean;
  /** Items whose consumer died after it called the marketplace. */
  crashed: Set<number>;
  /** Round trips held still until a test lets them go (see `holdAt`). */
  holds: Hold[];
}

interface Hold {
  matches: (sql: string[]) => boolean;
  reached: () => void;
  released: Promise<void>;
}

/** What a client has been told, per ad: the last intent answered 200, and the job that carries it. */
export interface Model {
  lastRequest: Map<number, { kind: "publish" | "unpublish"; jobId: number }>;
  locked: boolean;
  archived: Set<number>;
  /** Ads deleted, and whether the seller was: their listings stay (the contract does not unpublish them). */
  deletedAds: Set<number>;
  userDeleted: boolean;
  /** The seller took its connection down (DELETE /oauth/): jobs that may be at the marketplace wait. */
  disconnected: boolean;
  /** The internal client deleted the seller's payer: the seller pays for itself from then on. */
  payerDeleted: boolean;
}

export type Command = fc.AsyncCommand<Model, World>;

const adOf = (world: World, index: number) => world.adIds[index % world.adIds.length] as number;

/** Whether the ad was deleted, or its user. */
const gone = (model: Model, adId: number) => model.userDeleted || model.deletedAds.has(adId);

function expectNoServerError(answer: Answer, what: string) {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBeLessThan(500);
}

const jobIdOf = (answer: Answer): number | undefined => {
  const location = answer.headers.get("Location");
  return location ? Number(location.split("/").pop()) : undefined;
};

/**
 * Sets up one run: a connected seller with credit, two ads in a paid category, and the held queue. With
 * `payer`, another user's wallet pays for the seller (its `walletUserId`, set by the internal client).
 */
export async function newWorld(key: string, internalKey: string, options: { payer?: boolean } = {}): Promise<World> {
  // The group's shard now: a run before may have moved it.
  const clientId = (await call("GET", "/client/", { key })).body.data.clientId as number;
  const placed = await env.DIRECTORY.prepare(
    'SELECT g.id AS "group", g.shard AS shard FROM api_clients c JOIN client_groups g ON g.id = c.group_id WHERE c.id = ?',
  )
    .bind(clientId)
    .first<{ group: number; shard: number }>();
  if (!placed) throw new Error(`client ${clientId} has no group`);
  const { group, shard } = placed;
  const { userId, credentials } = await connectedSellerAccount(key, internalKey, 100_000);
  let payerId = userId;
  if (options.payer) {
    payerId = (await createUser(internalKey)).userId;
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: payerId, amount: 100_000, description: "opwaardering" },
    });
    const settings = await call("POST", "/user/settings/", {
      key: internalKey,
      body: { userId, status: "active", walletUserId: payerId },
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  }
  const adIds: number[] = [];
  for (const title of ["Brommer voor het model", "Scooter voor het model"])
    adIds.push((await createAd(key, userId, { categoryId: PAID_CATEGORY, title })).adId);
  const catalogue = await loadCatalogue(getDb(env.DB));
  const account = (await call("GET", `/oauth/${userId}/${PORTAL}/`, { key })).body.data.externalUserId as number;
  const world: World = {
    key,
    internalKey,
    userId,
    payerId,
    account,
    accounts: [account],
    credentials: new Map([[account, credentials]]),
    adIds,
    placementPrice: placingPrice(catalogue, PAID_CATEGORY, PORTAL),
    featurePrice: featurePrice(catalogue, PAID_CATEGORY, PORTAL, FEATURE)?.total ?? 0,
    queue: [],
    env: onShard(env, shard, "the caller's client"),
    group,
    shard,
    db: shardDatabase(env, shard),
    bindings: env,
    topUps: [],
    scheduler: null,
    racing: false,
    portalDown: false,
    batchesBeforeCrash: null,
    losingSends: false,
    crashed: new Set(),
    holds: [],
  };
  const interceptor = async (kind: "batch" | "statement", sql: string[]) => {
    const hold = world.holds.find((h) => h.matches(sql));
    if (hold) {
      world.holds.splice(world.holds.indexOf(hold), 1);
      hold.reached();
      await hold.released;
    }
    if (world.racing && world.scheduler) await world.scheduler.schedule(Promise.resolve(kind), kind);
    // The crash lands on the job's own writes; a token renewal's store between them is let through (a
    // renewal whose new tokens are lost cannot be recovered from a one-use refresh token: docs/publishing.md).
    const storesTokens = sql.some((s) => /^(insert into|update) "portal_connections"/i.test(s));
    if (kind === "batch" && world.batchesBeforeCrash !== null && !storesTokens) {
      if (world.batchesBeforeCrash === 0) {
        world.batchesBeforeCrash = null;
        throw new Error("the consumer's process was killed");
      }
      world.batchesBeforeCrash -= 1;
    }
  };
  const send = (bodies: JobMessage[]) => {
    if (world.losingSends) return;
    for (const body of bodies) if (body.kind === "publish") world.queue.push({ body, attempts: 0 });
  };
  const simulator = marketplaceSimulator(env);
  // The bindings of work on the seller's shard, as the cron and the consumer have them (`onShard`): every
  // shard's database intercepted, under its binding's name (the API opens it there; the group may move),
  // and queues that stamp the shard on what they send.
  world.bindings = {
    ...env,
    DB: interceptD1(env.DB, interceptor),
    DB_2: interceptD1(env.DB_2, interceptor),
    JOBS: {
      send: async (body: JobMessage) => send([body]),
      sendBatch: async (messages: { body: JobMessage }[]) => send(messages.map((m) => m.body)),
    },
    // The marketplace as the gateway reaches it: down for maintenance while the world says so.
    MARKETPLACE: {
      fetch: (input: RequestInfo | URL, init?: RequestInit) =>
        world.portalDown
          ? new Response('{"error":"down for maintenance"}', { status: 503 })
          : simulator.fetch(new Request(input, init)),
    },
  } as unknown as Env;
  world.env = onShard(world.bindings, shard, "the caller's client");
  return world;
}

/**
 * Holds the next D1 round trip whose SQL `matches` still: `reached` resolves when it is held, and the
 * round trip runs once `release` is called. A test stops one actor at an exact point while others run.
 */
export function holdAt(world: World, matches: (sql: string[]) => boolean) {
  let reached = () => {};
  let release = () => {};
  const hold: Hold = {
    matches,
    reached: () => reached(),
    released: new Promise<void>((resolve) => {
      release = resolve;
    }),
  };
  const isReached = new Promise<void>((resolve) => {
    reached = resolve;
  });
  world.holds.push(hold);
  return { reached: isReached, release: () => release() };
}

/** Delivers a message to the consumer (the `jobs` queue, or its dead-letter queue); answers whether it was acknowledged. */
export async function deliver(world: World, message: Message, queue = "jobs"): Promise<boolean> {
  const [acked] = await deliverTogether(world, [message], queue);
  return acked as boolean;
}

/** Delivers messages to the consumer in one batch; answers, per message, whether it was acknowledged. */
export async function deliverTogether(world: World, messages: Message[], queue = "jobs"): Promise<boolean[]> {
  const acked = messages.map(() => false);
  await executeJobs(
    {
      queue: queue === "dlq" ? (world.env.DEAD_LETTER_QUEUE as string) : "jobs",
      messages: messages.map((message, at) => {
        message.attempts += 1;
        return {
          id: String(message.body.itemId),
          timestamp: new Date(),
          body: message.body,
          attempts: message.attempts,
          ack: () => {
            acked[at] = true;
          },
          retry: () => {},
        };
      }),
      ackAll: () => {},
      retryAll: () => {},
    } as unknown as MessageBatch<JobMessage>,
    world.env,
  );
  return acked;
}

const take = (world: World, pick: number) => {
  const at = pick % world.queue.length;
  const [message] = world.queue.splice(at, 1);
  return message as Message;
};

const api = (world: World, method: string, path: string, body: unknown) =>
  call(method, path, { key: world.key, body, env: world.env });

// ——— Commands ———

export class Publish implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const adId = adOf(world, this.ad);
    const answer = await api(world, "POST", "/publish/", { userId: world.userId, adId, portal: PORTAL });
    expectNoServerError(answer, this.toString());
    if (gone(model, adId)) expect(answer.status, `${this} of a deleted ad`).toBe(404);
    else if (model.locked || model.archived.has(adId)) expect(answer.status, this.toString()).toBe(409);
    const jobId = jobIdOf(answer);
    if (answer.status === 200 && jobId) model.lastRequest.set(adId, { kind: "publish", jobId });
  }
  toString = () => `publish(${this.ad})`;
}

export class Unpublish implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const adId = adOf(world, this.ad);
    const answer = await api(world, "DELETE", "/publish/", { userId: world.userId, adId, portal: PORTAL });
    expectNoServerError(answer, this.toString());
    const jobId = jobIdOf(answer) ?? answer.body.data?.[0]?.queueItemId;
    if (answer.status === 200 && jobId) model.lastRequest.set(adId, { kind: "unpublish", jobId });
  }
  toString = () => `unpublish(${this.ad})`;
}

export class Feature implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(_: Model, world: World) {
    const adId = adOf(world, this.ad);
    const answer = await api(world, "POST", "/features/", { adId, portal: PORTAL, feature: FEATURE });
    expectNoServerError(answer, this.toString());
  }
  toString = () => `feature(${this.ad})`;
}

/** Retries the n-th failed job of the seller (if there is one), as an operator would. */
export class Retry implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const failed = await call("GET", `/jobs/?userId=${world.userId}&state=error`, { key: world.key });
    const jobs = failed.body.data as { queueItemId: number; adId: number; kind: string }[];
    if (jobs.length === 0) return;
    const job = jobs[this.pick % jobs.length] as (typeof jobs)[number];
    const answer = await api(world, "POST", `/jobs/${job.queueItemId}/retry`, undefined);
    expectNoServerError(answer, this.toString());
    if (job.kind !== "unpublish" && !gone(model, job.adId) && (model.locked || model.archived.has(job.adId)))
      expect(answer.status, `${this} of job ${job.queueItemId} while locked or archived`).toBe(409);
    const jobId = jobIdOf(answer);
    if (answer.status === 200 && jobId && (job.kind === "placement" || job.kind === "unpublish"))
      model.lastRequest.set(job.adId, { kind: job.kind === "placement" ? "publish" : "unpublish", jobId });
  }
  toString = () => `retry(${this.pick})`;
}

/** The consumer takes a message: acknowledged, or kept for redelivery when the job asks to be retried. */
export class Deliver implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(_: Model, world: World) {
    if (world.queue.length === 0) return;
    const message = take(world, this.pick);
    if (!(await deliver(world, message))) world.queue.push(message);
  }
  toString = () => `deliver(${this.pick})`;
}

/** The same message delivered twice (at-least-once delivery): the copy stays in the queue. */
export class Redeliver implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(_: Model, world: World) {
    if (world.queue.length === 0) return;
    const message = world.queue[this.pick % world.queue.length] as Message;
    await deliver(world, { ...message });
  }
  toString = () => `redeliver(${this.pick})`;
}

/** The consumer's process is killed after its claim and marketplace call, before it writes the outcome. */
export class Crash implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(_: Model, world: World) {
    if (world.queue.length === 0) return;
    const message = world.queue[this.pick % world.queue.length] as Message;
    world.batchesBeforeCrash = 1;
    const acknowledged = await deliver(world, { ...message });
    if (world.batchesBeforeCrash === null) {
      // The process died: the message was not acknowledged, and stays in the queue for redelivery.
      expect(acknowledged).toBe(false);
      world.crashed.add(message.body.itemId);
    }
    world.batchesBeforeCrash = null;
  }
  toString = () => `crash(${this.pick})`;
}

/** The cron's recovery, ten minutes on: lost messages and items of dead consumers are sent again. */
export class Recover implements Command {
  check = () => true;
  async run(_: Model, world: World) {
    // Time passes: the jobs that wait for a connection (or an answer) reach their bound.
    await passWaitBound(world);
    await resendStalledJobs({ ...jobContext(world.env), now: new Date(Date.now() + 10 * 60_000) }, { limit: 500 });
  }
  toString = () => "recover";
}

export class PortalDown implements Command {
  constructor(readonly down: boolean) {}
  check = () => true;
  async run(_: Model, world: World) {
    world.portalDown = this.down;
  }
  toString = () => (this.down ? "portalDown" : "portalUp");
}

/** A message whose retries ran out while the marketplace was down goes to the dead-letter queue. */
export class DeadLetter implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(_: Model, world: World) {
    // Even after an attempt that reached the marketplace: the dead letter asks it before anything is refunded.
    const candidates = world.queue;
    if (!world.portalDown || candidates.length === 0) return;
    const message = candidates[this.pick % candidates.length] as Message;
    world.queue.splice(world.queue.indexOf(message), 1);
    await deliver(world, message, "dlq");
  }
  toString = () => `deadLetter(${this.pick})`;
}

/** A request that dies between its writes and its message: the message is lost (the cron re-sends it). */
export class LostSend implements Command {
  constructor(readonly inner: Command) {}
  check = () => true;
  async run(model: Model, world: World) {
    world.losingSends = true;
    try {
      await this.inner.run(model, world);
    } finally {
      world.losingSends = false;
    }
  }
  toString = () => `lostSend(${this.inner})`;
}

/** The seller is locked or unlocked by its client. */
export class Lock implements Command {
  constructor(readonly locked: boolean) {}
  check = () => true;
  async run(model: Model, world: World) {
    const answer = await call("POST", "/usersettings/", {
      key: world.key,
      body: { userId: world.userId, status: this.locked ? "locked" : "active" },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(model.userDeleted ? 404 : 200);
    if (!model.userDeleted) model.locked = this.locked;
  }
  toString = () => (this.locked ? "lock" : "unlock");
}

/** The marketplace starts or stops refusing an ad (its title); an archived ad is archived for good. */
export class Reject implements Command {
  constructor(
    readonly ad: number,
    readonly on: boolean,
  ) {}
  check = () => true;
  async run(_: Model, world: World) {
    const adId = adOf(world, this.ad);
    await world.db
      .prepare("UPDATE ads SET title = ? WHERE id = ?")
      .bind(this.on ? `Brommer ${adId} [reject]` : `Brommer ${adId}`, adId)
      .run();
  }
  toString = () => `reject(${this.ad}, ${this.on})`;
}

export class Archive implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const adId = adOf(world, this.ad);
    await world.db.prepare("UPDATE ads SET status = 'archive' WHERE id = ?").bind(adId).run();
    model.archived.add(adId);
  }
  toString = () => `archive(${this.ad})`;
}

/** The marketplace commits the seller's next writes and then fails their answers (503, 422, or none). */
export class Fault implements Command {
  constructor(
    readonly mode: MarketplaceFault,
    readonly times: number,
  ) {}
  check = () => true;
  async run(_: Model, world: World) {
    await marketplace(PORTAL).fault(world.account, this.mode, this.times);
  }
  toString = () => `fault(${this.mode}, ${this.times})`;
}

/** Every access token ends, at the marketplace and in our records: the next jobs must renew it. */
export class ExpireTokens implements Command {
  check = () => true;
  async run(_: Model, world: World) {
    await marketplace(PORTAL).expireTokens();
    await world.db
      .prepare("UPDATE portal_connections SET access_token_expire = '2026-01-01T00:00:00.000Z' WHERE user_id = ?")
      .bind(world.userId)
      .run();
  }
  toString = () => "expireTokens";
}

/** The consumer takes every queued message in one batch (the jobs run side by side). */
export class DeliverTogether implements Command {
  check = () => true;
  async run(_: Model, world: World) {
    const messages = world.queue.splice(0);
    const acked = await deliverTogether(world, messages);
    messages.forEach((message, at) => {
      if (!acked[at]) world.queue.push(message);
    });
  }
  toString = () => "deliverTogether";
}

/** The seller connects the portal again: to a new marketplace account, or back to one it had. */
export class Reconnect implements Command {
  constructor(readonly to: number | "new") {}
  check = () => true;
  async run(model: Model, world: World) {
    if (model.userDeleted) return; // a deleted user has no connection to start
    const account = this.to === "new" ? undefined : world.accounts[this.to % world.accounts.length];
    const credentials = account === undefined ? undefined : world.credentials.get(account);
    const { answer, credentials: used } = await authorizeAccount(world.key, world.userId, PORTAL, credentials);
    expectNoServerError(answer, this.toString());
    if (answer.status === 200) {
      model.disconnected = false;
      world.account = answer.body.data.externalUserId as number;
      if (!world.accounts.includes(world.account)) world.accounts.push(world.account);
      world.credentials.set(world.account, used);
      return;
    }
    // Refused while listings are live (or jobs running) at another account: the first stays connected.
    expect(answer.body.errorDetails?.[0]?.code, JSON.stringify(answer.body)).toBe("portal_account_has_listings");
  }
  toString = () => `reconnect(${this.to})`;
}

/** The seller takes its connection down: a job that may be at the marketplace waits for one. */
export class Disconnect implements Command {
  check = () => true;
  async run(model: Model, world: World) {
    if (model.userDeleted) return;
    const answer = await call("DELETE", `/oauth/${world.userId}/${PORTAL}/`, { key: world.key, env: world.env });
    expectNoServerError(answer, this.toString());
    expect(answer.status, this.toString()).toBe(200);
    model.disconnected = true;
  }
  toString = () => "disconnect";
}

/** A day passes for the jobs that wait: their waits reach the bound (WAIT_BOUND_MS). */
export class PassWaitBound implements Command {
  check = () => true;
  async run(_: Model, world: World) {
    await passWaitBound(world);
  }
  toString = () => "passWaitBound";
}

async function passWaitBound(world: World) {
  const past = new Date(Date.now() - WAIT_BOUND_MS - 60_000).toISOString();
  await world.db
    .prepare("UPDATE queue_items SET waiting_since = ? WHERE user_id = ? AND waiting_since IS NOT NULL")
    .bind(past, world.userId)
    .run();
}

/** The client deletes an ad (the contract does not unpublish it). */
export class DeleteAd implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const adId = adOf(world, this.ad);
    const answer = await call("DELETE", `/ads/${adId}`, { key: world.key, env: world.env });
    expectNoServerError(answer, this.toString());
    expect(answer.status, this.toString()).toBe(gone(model, adId) ? 404 : 200);
    model.deletedAds.add(adId);
  }
  toString = () => `deleteAd(${this.ad})`;
}

/** The client deletes the seller (anonymised: it has ads and transactions). */
export class DeleteUser implements Command {
  check = () => true;
  async run(model: Model, world: World) {
    const answer = await call("DELETE", `/users/${world.userId}`, { key: world.key, env: world.env });
    expectNoServerError(answer, this.toString());
    expect(answer.status, this.toString()).toBe(model.userDeleted ? 404 : 200);
    model.userDeleted = true;
  }
  toString = () => "deleteUser";
}

/**
 * The internal client deletes the seller's payer (anonymised: it has a ledger). A job it paid for that
 * waits is refunded to it; the seller pays for itself from then on.
 */
export class DeletePayer implements Command {
  check = () => true;
  async run(model: Model, world: World) {
    if (world.payerId === world.userId) return;
    const answer = await call("DELETE", `/users/${world.payerId}`, { key: world.internalKey, env: world.env });
    expectNoServerError(answer, this.toString());
    expect(answer.status, this.toString()).toBe(model.payerDeleted ? 404 : 200);
    model.payerDeleted = true;
    if (model.userDeleted) return;
    const settings = await call("GET", `/user/settings/${world.userId}`, { key: world.internalKey });
    expect(settings.body.data.walletUserId, "a deleted payer pays for no one").toBeNull();
  }
  toString = () => "deletePayer";
}

/**
 * The internal client and the partner write the seller at once: the internal client its subscriptions and
 * its payer, the partner the user and the settings it read, sent back whole. No write undoes another: the
 * payer and the subscriptions stay as the internal client set them.
 */
export class ConcurrentWrites implements Command {
  constructor(readonly stock: boolean) {}
  check = () => true;
  async run(model: Model, world: World) {
    if (model.userDeleted) return;
    const { userId } = world;
    const [user, settings] = await Promise.all([
      call("GET", `/users/${userId}`, { key: world.key }),
      call("GET", `/user/settings/${userId}`, { key: world.key }),
    ]);
    const payer = model.payerDeleted || world.payerId === userId ? null : world.payerId;
    const status = model.locked ? "locked" : "active";
    const internal = [
      call("PUT", "/users/", { key: world.internalKey, body: { userId, subscriptions: { stock: this.stock } } }),
      ...(payer
        ? [call("POST", "/user/settings/", { key: world.internalKey, body: { userId, walletUserId: payer, status } })]
        : []),
    ];
    const partner = [
      call("PUT", "/users/", { key: world.key, body: user.body.data[0] }),
      call("POST", "/user/settings/", { key: world.key, body: settings.body.data }),
    ];
    const [internalAnswers, partnerAnswers] = await Promise.all([Promise.all(internal), Promise.all(partner)]);
    for (const answer of internalAnswers) expect(answer.status, `${this}: ${JSON.stringify(answer.body)}`).toBe(200);
    // The partner's copy may have read other subscriptions: sent back, that is a change it may not make.
    for (const answer of partnerAnswers)
      expect([200, 403], `${this}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
    const [after, afterSettings] = await Promise.all([
      call("GET", `/users/${userId}`, { key: world.internalKey }),
      call("GET", `/user/settings/${userId}`, { key: world.internalKey }),
    ]);
    expect(after.body.data[0]?.subscriptions.stock, `${this}: the internal client's subscriptions`).toBe(this.stock);
    expect(afterSettings.body.data.walletUserId, `${this}: the internal client's payer`).toBe(payer);
  }
  toString = () => `concurrentWrites(${this.stock})`;
}

/** The partner writes the seller's settings (a replace without the internal-only fields it cannot set). */
export class PartnerSettings implements Command {
  constructor(readonly allowbids: boolean) {}
  check = () => true;
  async run(model: Model, world: World) {
    const answer = await call("POST", "/user/settings/", {
      key: world.key,
      body: { userId: world.userId, status: model.locked ? "locked" : "active", allowbids: this.allowbids },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(model.userDeleted ? 404 : 200);
  }
  toString = () => `partnerSettings(${this.allowbids})`;
}

/** The listing `remoteAdId` of the ad reaches its close date: the marketplace ends it. */
export async function endListing(model: Model, world: World, adId: number, remoteAdId: number) {
  await marketplace(PORTAL).closeListing(remoteAdId);
  await world.db
    .prepare("UPDATE ad_publications SET close_date = '2026-01-01T00:00:00.000Z' WHERE ad_id = ? AND portal = ?")
    .bind(adId, PORTAL)
    .run();
  // The client's last publish no longer holds.
  model.lastRequest.delete(adId);
}

/**
 * A live listing reaches its close date (the marketplace ends it) and asks to be placed again: the cron's
 * autoreplace charges and places it only when a fresh publish would.
 */
export class Autoreplace implements Command {
  constructor(readonly ad: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const adId = adOf(world, this.ad);
    const publication = await world.db
      .prepare(
        "SELECT remote_ad_id AS remoteAdId FROM ad_publications WHERE ad_id = ? AND portal = ? AND active = 1 AND pending = 0",
      )
      .bind(adId, PORTAL)
      .first<{ remoteAdId: number }>();
    if (!publication || gone(model, adId)) return;
    const replaced = !model.locked && !model.archived.has(adId);
    const settings = await call("POST", "/adsettings/", {
      key: world.key,
      body: { adId, settings: [{ portal: PORTAL, autoreplace: true }] },
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
    await endListing(model, world, adId, publication.remoteAdId);
    const outcome = await replaceExpiredListings(jobContext(world.env), { limit: 50 });
    if (!replaced) expect(outcome.replaced, `${this} of a seller a fresh publish would refuse`).toBe(0);
  }
  toString = () => `autoreplace(${this.ad})`;
}

/**
 * The seller's client group moves to the other shard, as an operator's move runs it (src/db/moves/):
 * copied, caught up, switched and confirmed, with the jobs the switch cut off sent again. Between
 * commands nothing else runs, so the move settles at once (no isolate but this one routes the group, and
 * its runner forgets what it read of it); what the queue holds runs on the new shard.
 */
export class MoveGroup implements Command {
  check = () => true;
  async run(_model: Model, world: World) {
    const from = world.shard;
    const to = from === 1 ? 2 : 1;
    const shards = { directory: env.DIRECTORY, source: shardDatabase(env, from), target: shardDatabase(env, to) };
    expect(await beginMove(env.DIRECTORY, { group: world.group, from, to }), `${this}: begun`).toBe(true);
    forgetGroupRoutes(world.group);
    const { state, switched } = await advanceMove(shards, world.group, { settleMs: 0, budgetMs: 120_000 });
    expect({ state: state?.state, switched }, `${this}: switched`).toEqual({ state: "moved", switched: true });
    forgetGroupRoutes(world.group);
    world.shard = to;
    world.db = shardDatabase(env, to);
    world.env = onShard(world.bindings, to, "the group's");
    await resendJobsCutByMove(jobContext(world.env), { groupId: world.group });
    const confirmed = await call("POST", `/clientgroups/${world.group}/move/confirm`, { key: world.internalKey });
    expect(confirmed.status, `${this}: ${JSON.stringify(confirmed.body)}`).toBe(200);
    // Nothing of the group stays on the shard it left.
    const left = await groupHoldings(shardDatabase(env, from), world.group);
    expect(
      Object.values(left).every((n) => n === 0),
      `${this}: left ${JSON.stringify(left)}`,
    ).toBe(true);
    console.info(`model: group ${world.group} moved from shard ${from} to ${to}`);
  }
  toString = () => "moveGroup";
}

/**
 * The internal client tops the seller's payer up with a new Idempotency-Key (`repeat`: sends an earlier
 * top-up again, key and body): each key credits once, across moves.
 */
export class TopUp implements Command {
  constructor(readonly repeat: number | null) {}
  check = () => true;
  async run(model: Model, world: World) {
    const earlier = this.repeat === null ? undefined : world.topUps[this.repeat % Math.max(world.topUps.length, 1)];
    const topUp = earlier ?? { key: crypto.randomUUID(), amount: 100 + world.topUps.length };
    const answer = await call("POST", "/wallet/", {
      key: world.internalKey,
      body: { userId: world.payerId, amount: topUp.amount, description: `model top-up ${topUp.key}` },
      headers: { "Idempotency-Key": topUp.key },
      env: world.env,
    });
    // A repeat is answered by its first answer, whatever happened since (the payer deleted too).
    if (earlier) {
      expect(answer.status, `${this}: ${JSON.stringify(answer.body)}`).toBe(200);
      expect(answer.headers.get("Idempotent-Replayed"), `${this}: replayed`).toBe("true");
      return;
    }
    expect(answer.status, `${this}: ${JSON.stringify(answer.body)}`).toBe(model.payerDeleted ? 404 : 200);
    if (answer.status === 200) world.topUps.push(topUp);
  }
  toString = () => `topUp(${this.repeat ?? "new"})`;
}

/** Two commands at once, their D1 round trips interleaved by fast-check's scheduler. */
export class Race implements Command {
  constructor(
    readonly first: Command,
    readonly second: Command,
  ) {}
  check = () => true;
  async run(model: Model, world: World) {
    const scheduler = world.scheduler;
    if (!scheduler) throw new Error("a race needs the run's scheduler");
    world.racing = true;
    // Both run to their end even when one fails, and what they left scheduled (work a request handed to
    // waitUntil) is let go: a round trip held forever would hold its connection and stall later runs.
    const settled = await scheduler.waitFor(
      Promise.allSettled([this.first.run(model, world), this.second.run(model, world)]),
    );
    world.racing = false;
    await scheduler.waitAll();
    for (const result of settled) if (result.status === "rejected") throw result.reason;
  }
  toString = () => `race(${this.first}, ${this.second})`;
}

/** The consumer takes the newest message (the one a command racing it has not sent yet is not it). */
export class DeliverNewest implements Command {
  check = () => true;
  async run(model: Model, world: World) {
    await new Deliver(world.queue.length - 1).run(model, world);
  }
  toString = () => "deliverNewest";
}

/** Runs its steps in order: a path that random steps rarely line up (a failed job, a race at completion). */
export class Steps implements Command {
  constructor(
    readonly name: string,
    readonly steps: Command[],
  ) {}
  check = () => true;
  async run(model: Model, world: World) {
    for (const step of this.steps) await step.run(model, world);
  }
  toString = () => this.name;
}

/** The marketplace refuses the ad's placement (refunded), then the ad is fixed: a failed, retryable job. */
const refusedPlacement = (a: number) =>
  new Steps(`refusedPlacement(${a})`, [new Reject(a, true), new Publish(a), new DeliverNewest(), new Reject(a, false)]);

/** A feature whose messages ran out while the marketplace was down: a failed, retryable feature job. */
const deadFeature = (a: number) =>
  new Steps(`deadFeature(${a})`, [new PortalDown(true), new Feature(a), new DeadLetter(0), new PortalDown(false)]);

/** A publish, then a repeat (or an unpublish) racing the consumer that completes the first. */
const atCompletion = (a: number, second: Command) =>
  new Steps(`atCompletion(${a}, ${second})`, [new Publish(a), new Race(second, new DeliverNewest())]);

const ad = fc.nat({ max: 1 });
const FAULTS: MarketplaceFault[] = ["commit-then-503", "commit-then-422", "lost-answer"];
const pick = fc.nat({ max: 9 });

/** The commands by name, each with its weight, so that runs reach live listings, failures and retries. */
const COMMANDS: Record<string, [weight: number, fc.Arbitrary<Command>]> = {
  publish: [2, ad.map((a) => new Publish(a))],
  unpublish: [1, ad.map((a) => new Unpublish(a))],
  feature: [1, ad.map((a) => new Feature(a))],
  retry: [3, pick.map((p) => new Retry(p))],
  deliver: [4, pick.map((p) => new Deliver(p))],
  redeliver: [1, pick.map((p) => new Redeliver(p))],
  crash: [1, pick.map((p) => new Crash(p))],
  recover: [1, fc.constant(new Recover())],
  portalDown: [1, fc.boolean().map((down) => new PortalDown(down))],
  deadLetter: [1, pick.map((p) => new DeadLetter(p))],
  lostSend: [1, ad.map((a) => new LostSend(new Publish(a)))],
  lock: [1, fc.boolean().map((locked) => new Lock(locked))],
  reject: [2, fc.tuple(ad, fc.boolean()).map(([a, on]) => new Reject(a, on))],
  archive: [1, ad.map((a) => new Archive(a))],
  refusedPlacement: [2, ad.map(refusedPlacement)],
  retried: [2, pick.map((p) => new Steps(`retried(${p})`, [new Retry(p), new DeliverNewest()]))],
  deadFeature: [1, ad.map(deadFeature)],
  repeatAtCompletion: [1, ad.map((a) => atCompletion(a, new Publish(a)))],
  cancelAtCompletion: [1, ad.map((a) => atCompletion(a, new Unpublish(a)))],
  fault: [2, fc.tuple(fc.constantFrom(...FAULTS), fc.integer({ min: 1, max: 6 })).map(([m, n]) => new Fault(m, n))],
  expireTokens: [1, fc.constant(new ExpireTokens())],
  deliverTogether: [2, fc.constant(new DeliverTogether())],
  tokenRace: [
    1,
    fc.constant(new Steps("tokenRace", [new Publish(0), new Publish(1), new ExpireTokens(), new DeliverTogether()])),
  ],
  reconnect: [1, fc.oneof(fc.constant<"new">("new"), pick).map((to) => new Reconnect(to))],
  deleteAd: [1, ad.map((a) => new DeleteAd(a))],
  deleteUser: [1, fc.constant(new DeleteUser())],
  disconnect: [1, fc.constant(new Disconnect())],
  passWaitBound: [1, fc.constant(new PassWaitBound())],
  waitThenReconnect: [
    1,
    fc
      .tuple(ad, fc.oneof(fc.constant<"new">("new"), pick))
      .map(
        ([a, to]) =>
          new Steps(`waitThenReconnect(${a}, ${to})`, [
            new Fault("commit-then-503", 1),
            new Publish(a),
            new DeliverNewest(),
            new Disconnect(),
            new DeliverNewest(),
            new Reconnect(to),
          ]),
      ),
  ],
  deleteWithOpenJobs: [
    1,
    ad.map((a) => new Steps(`deleteWithOpenJobs(${a})`, [new Publish(a), new Feature(a), new DeleteAd(a)])),
  ],
  partnerSettings: [1, fc.boolean().map((allowbids) => new PartnerSettings(allowbids))],
  deletePayer: [1, fc.constant(new DeletePayer())],
  payerGoneWhileWaiting: [
    1,
    ad.map(
      (a) =>
        new Steps(`payerGoneWhileWaiting(${a})`, [
          new Fault("commit-then-503", 1),
          new Publish(a),
          new DeliverNewest(),
          new Disconnect(),
          new DeliverNewest(),
          new DeletePayer(),
        ]),
    ),
  ],
  concurrentWrites: [1, fc.boolean().map((stock) => new ConcurrentWrites(stock))],
  autoreplace: [1, ad.map((a) => new Autoreplace(a))],
  lockedAutoreplace: [1, ad.map((a) => new Steps(`lockedAutoreplace(${a})`, [new Lock(true), new Autoreplace(a)]))],
  moveGroup: [2, fc.constant(new MoveGroup())],
  topUp: [1, fc.option(pick, { nil: null }).map((repeat) => new TopUp(repeat))],
  moveWhileOpen: [
    1,
    ad.map(
      (a) =>
        new Steps(`moveWhileOpen(${a})`, [
          new TopUp(null),
          new Publish(a),
          new Feature(a),
          new MoveGroup(),
          new TopUp(0),
        ]),
    ),
  ],
};
const RACERS = ["publish", "unpublish", "feature", "retry", "deliver"];

/**
 * The commands, less those named in `without` (a run over a subset reaches the paths the others would
 * mask), with pairs of the API calls and the consumer racing.
 */
export function commandsArbitrary(maxCommands: number, without: string[] = []) {
  const kept = Object.entries(COMMANDS).filter(([name]) => !without.includes(name));
  const racer = fc.oneof(...kept.filter(([name]) => RACERS.includes(name)).map(([, [, command]]) => command));
  const commands = kept.flatMap(([, [weight, command]]) => Array.from({ length: weight }, () => command));
  if (!without.includes("race"))
    commands.push(fc.tuple(racer, racer).map(([first, second]) => new Race(first, second)));
  return fc.commands(commands, { maxCommands, size: "+1" });
}

/** The whole queue delivered, in order, until it is empty. */
export async function deliverAll(world: World) {
  while (world.queue.length > 0) await new Deliver(0).run(newModel(), world);
}

/**
 * Delivers and recovers until no job is open (bounded), then runs the cron's autoreplace once more; the
 * marketplace is up again.
 */
export async function settle(world: World) {
  world.portalDown = false;
  for (let round = 0; round < 40; round += 1) {
    while (world.queue.length > 0) {
      const message = world.queue.shift() as Message;
      if (!(await deliver(world, message))) world.queue.push(message);
      if (message.attempts > 20) {
        const job = await world.db.prepare("SELECT * FROM queue_items WHERE id = ?").bind(message.body.itemId).first();
        throw new Error(`message of item ${message.body.itemId} never settles: ${JSON.stringify(job)}`);
      }
    }
    const open = await world.db
      .prepare("SELECT count(*) AS n FROM queue_items WHERE user_id = ? AND status IN ('pending', 'processing')")
      .bind(world.userId)
      .first<{ n: number }>();
    if (!open?.n) {
      // The cron's autoreplace, which waits for the open jobs of a listing that ended: its placements
      // are delivered in the next round.
      const { replaced } = await replaceExpiredListings(jobContext(world.env), { limit: 50 });
      if (replaced === 0) return;
      continue;
    }
    // Time passes: the jobs that wait for a connection (or an answer) reach their bound.
    await passWaitBound(world);
    await resendStalledJobs({ ...jobContext(world.env), now: new Date(Date.now() + 10 * 60_000) }, { limit: 500 });
  }
  throw new Error("jobs still open after 40 rounds of delivery and recovery");
}

/**
 * The invariants, against what the marketplace holds, across every account the seller was connected to:
 * at most one live listing per ad; what the seller paid (charges less refunds) is what the marketplace
 * holds (placements and features); every live listing is known to `/status/` (an ad that still exists,
 * which shows the listing the marketplace has) or to a job (a deleted ad's); and the client's last word
 * wins (a publish that reports done is live, an unpublish that reports done or a placement it cancelled
 * is not).
 */
export async function checkInvariants(model: Model, world: World) {
  const simulator = marketplace(PORTAL);
  const listings = (
    await Promise.all(
      world.accounts.map(async (account) =>
        (await simulator.listings(account)).map((listing) => ({ ...listing, account })),
      ),
    )
  ).flat();
  // A reference is unique per marketplace account (a retried placement reuses it at another account).
  const atAccount = (account: number | null, ref: string | null) => `${account}:${ref}`;
  const held = await Promise.all(world.accounts.map((account) => simulator.summary(account)));
  const adOfRef = (ref: string) => Number(/^ad-(\d+)-/.exec(ref)?.[1] ?? 0);
  const paid = await world.db
    .prepare(
      "SELECT coalesce(-sum(amount), 0) AS cents FROM wallet_entries WHERE user_id IN (?, ?) AND kind IN ('charge', 'refund')",
    )
    .bind(world.userId, world.payerId)
    .first<{ cents: number }>();
  if (world.payerId !== world.userId && !model.payerDeleted) {
    const own = await world.db
      .prepare("SELECT count(*) AS n FROM wallet_entries WHERE user_id = ? AND kind = 'charge'")
      .bind(world.userId)
      .first<{ n: number }>();
    expect(own?.n, "the payer the internal client chose pays every charge").toBe(0);
  }
  if (!model.payerDeleted) {
    // Every keyed top-up credited once, whatever its repeats and the moves between them.
    const credits = await world.db
      .prepare(
        "SELECT description FROM wallet_entries WHERE user_id = ? AND kind = 'credit' AND description LIKE 'model top-up %'",
      )
      .bind(world.payerId)
      .all<{ description: string }>();
    expect(
      credits.results.map((credit) => credit.description).sort(),
      "each Idempotency-Key of a top-up credited once",
    ).toEqual(world.topUps.map((topUp) => `model top-up ${topUp.key}`).sort());
  }
  if (!model.userDeleted && !model.disconnected) {
    const connection = await call("GET", `/oauth/${world.userId}/${PORTAL}/`, { key: world.key });
    expect(connection.body.data.status, "the connection survives token expiry and refused reconnects").toBe(true);
  }
  const heldListings = held.reduce((n, summary) => n + summary.listings, 0);
  const heldFeatures = held.reduce((n, summary) => n + summary.features, 0);
  // A job settled without an answer (a wait past its bound, a deleted seller, another account) was
  // refunded and recorded: what the marketplace holds of it is named by its record, for an operator.
  const unresolved = (
    await world.db
      .prepare(
        "SELECT json_extract(data, '$.kind') AS kind, json_extract(data, '$.externalRef') AS ref, json_extract(data, '$.account') AS account, json_extract(data, '$.cost') AS cost, ad_id AS adId FROM events WHERE type = 'job.unresolved' AND user_id = ?",
      )
      .bind(world.userId)
      .all<{ kind: string; ref: string | null; account: number | null; cost: number; adId: number }>()
  ).results;
  // The listings unresolved placements may have made (an unresolved update or unpublish names a listing the API knows).
  const unresolvedRefs = new Set(
    unresolved.filter((record) => record.kind === "placement").map((record) => atAccount(record.account, record.ref)),
  );
  // A retry keeps the failed placement's reference, so a later placement job may have found the listing an
  // unresolved record names and been charged for it: that listing is paid, and the API knows it again.
  const jobs = (await call("GET", `/jobs/?userId=${world.userId}&itemsPerPage=500`, { key: world.internalKey })).body
    .data as { remoteAdId: number | null; state: string; kind: string }[];
  const adopted = new Set(
    jobs.filter((job) => job.kind === "placement" && job.state === "done").map((job) => job.remoteAdId),
  );
  const unresolvedListing = (listing: (typeof listings)[number]) =>
    unresolvedRefs.has(atAccount(listing.account, listing.externalRef)) && !adopted.has(listing.remoteAdId);
  const heldUnpaid = listings.filter(unresolvedListing).length;
  const unsettledListings = new Set(
    unresolved.filter((record) => record.kind === "update" || record.kind === "unpublish").map((r) => r.adId),
  );
  const unresolvedCents = unresolved.reduce((cents, record) => cents + record.cost, 0);
  const heldCents = heldListings * world.placementPrice + heldFeatures * world.featurePrice;
  if (unresolved.length === 0)
    expect(paid?.cents, "paid = placements and features the marketplaces hold").toBe(heldCents);
  else {
    // Held and not paid for: only what unresolved records name, and never more than they refunded.
    expect(heldCents - (paid?.cents ?? 0), "held but not paid: named by job.unresolved records").toBeGreaterThanOrEqual(
      heldUnpaid * world.placementPrice,
    );
    expect(heldCents - (paid?.cents ?? 0), "held but not paid: at most what the records refunded").toBeLessThanOrEqual(
      unresolvedCents,
    );
    expect(paid?.cents ?? 0, "never paid for what the marketplace does not hold").toBeLessThanOrEqual(heldCents);
  }
  const knownToJobs = new Set(jobs.map((job) => job.remoteAdId));
  for (const adId of world.adIds) {
    // A listing named by an unresolved record is the operator's to reconcile; the API no longer shows it.
    const online = listings.filter((l) => l.online && adOfRef(l.externalRef) === adId && !unresolvedListing(l));
    expect(online.length, `ad ${adId}: live listings at the marketplaces`).toBeLessThanOrEqual(1);
    const exists = !model.userDeleted && !model.deletedAds.has(adId);
    if (!exists) {
      for (const listing of online)
        expect(
          knownToJobs.has(listing.remoteAdId),
          `ad ${adId} (deleted): listing ${listing.remoteAdId} known to a job`,
        ).toBe(true);
      continue;
    }
    const status = await call("GET", `/status/${world.userId}/${adId}`, { key: world.key });
    const publish = status.body.data[0]?.portals.find((p: { portal: string }) => p.portal === PORTAL)?.publish;
    // An unpublish or update settled unresolved may have reached the listing: /status/ keeps what the
    // API last knew (a listing the marketplace has, live or not) until an operator reconciles it.
    if (!unsettledListings.has(adId)) {
      expect(Boolean(publish?.active), `ad ${adId}: /status/ active equals the marketplace`).toBe(online.length === 1);
      if (online[0])
        expect(publish?.remoteAdId, `ad ${adId}: /status/ names the live listing`).toBe(online[0].remoteAdId);
    } else if (publish?.active)
      expect(
        listings.some((l) => l.remoteAdId === publish.remoteAdId && adOfRef(l.externalRef) === adId),
        `ad ${adId} (unresolved): /status/ names a listing the marketplace has`,
      ).toBe(true);
    const last = model.lastRequest.get(adId);
    if (!last) continue;
    const job = (await call("GET", `/jobs/${last.jobId}`, { key: world.key })).body.data;
    if (last.kind === "publish" && job.state === "done")
      expect(online.length, `ad ${adId}: the last word was a publish (job ${last.jobId} done)`).toBe(1);
    if (last.kind === "unpublish" && (job.state === "done" || job.state === "cancelled"))
      expect(online.length, `ad ${adId}: the last word was an unpublish (job ${last.jobId} ${job.state})`).toBe(0);
  }
}

export const newModel = (): Model => ({
  lastRequest: new Map(),
  locked: false,
  archived: new Set(),
  deletedAds: new Set(),
  userDeleted: false,
  disconnected: false,
  payerDeleted: false,
});

/** One property run: a fresh world (its seller paid for by another user), the commands, then drained and checked. */
export async function modelRun(
  clients: { key: string; internalKey: string },
  scheduler: fc.Scheduler,
  commands: Iterable<Command>,
) {
  const world = await newWorld(clients.key, clients.internalKey, { payer: true });
  world.scheduler = scheduler;
  const model = newModel();
  await fc.asyncModelRun(() => ({ model, real: world }), commands);
  await settle(world);
  try {
    await checkInvariants(model, world);
  } catch (error) {
    // The seller's jobs as they ended: what a shrunk counterexample needs to be read.
    const items = await world.db
      .prepare(
        "SELECT id, ad_id, action, status, cost, retry_of, attempts, reason FROM queue_items WHERE user_id = ? ORDER BY id",
      )
      .bind(world.userId)
      .all();
    console.error("the seller's jobs:", JSON.stringify(items.results));
    throw error;
  }
}
