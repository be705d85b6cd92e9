import { beforeAll, describe, expect, it } from "vitest";
import { call, twoClients } from "../harness/api";
import {
  type Command,
  Crash,
  checkInvariants,
  DeadLetter,
  deliver,
  deliverAll,
  Feature,
  holdAt,
  Lock,
  type Model,
  newModel,
  newWorld,
  PortalDown,
  Publish,
  Recover,
  Reject,
  settle,
  Unpublish,
  type World,
} from "./marketplaceModel";

/**
 * The paths around exactly-once publishing that leaked money or listings, each as the sequence that
 * showed it (retries, a repeat publish racing completion, DELETE racing the consumer's claim, unpublish
 * then publish), driven with the model test's commands and checked against the marketplace simulator.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

async function run(model: Model, world: World, commands: Command[]) {
  for (const command of commands) await command.run(model, world);
}

const failedJobs = async (world: World) =>
  (await call("GET", `/jobs/?userId=${world.userId}&state=error`, { key: world.key })).body.data as {
    queueItemId: number;
    retryable: boolean;
    notRetryableReason: string | null;
  }[];

const retry = (world: World, jobId: number) => call("POST", `/jobs/${jobId}/retry`, { key: world.key, env: world.env });

const codeOf = (answer: { body: { errorDetails?: { code: string }[] } }) => answer.body.errorDetails?.[0]?.code;

/** A placement the marketplace refused (its charge refunded), then the ad fixed: the failed job. */
async function refusedPlacement(model: Model, world: World) {
  await run(model, world, [new Reject(0, true), new Publish(0)]);
  await deliverAll(world);
  await new Reject(0, false).run(model, world);
  const [failed] = await failedJobs(world);
  return failed?.queueItemId as number;
}

describe("money and listings around the core", () => {
  it("a failed placement is retried once: a second and third retry answer 409 and charge nothing", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const failedId = await refusedPlacement(model, world);
    const before = (await call("GET", `/jobs/${failedId}`, { key })).body.data;
    const first = await retry(world, failedId);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toMatchObject({ retryOf: failedId, cost: world.placementPrice, state: "pending" });
    expect(first.headers.get("Location")).toBe(`/rest/v1/jobs/${first.body.data.queueItemId}`);
    await deliverAll(world);
    const again = [];
    for (const _ of [1, 2]) {
      again.push(await retry(world, failedId));
      await deliverAll(world);
    }
    // What the marketplace holds is what was paid: one placement.
    await settle(world);
    await checkInvariants(model, world);
    for (const answer of again) {
      expect(answer.status).toBe(409);
      expect(codeOf(answer)).toBe("job_not_retryable");
      expect(answer.body.errors[0]).toContain(`followed by job ${first.body.data.queueItemId}`);
    }
    // The operator's view: retryable until it was retried, then why not.
    expect(before).toMatchObject({ state: "error", retryable: true, notRetryableReason: null });
    const job = (await call("GET", `/jobs/${failedId}`, { key })).body.data;
    expect(job).toMatchObject({ state: "error", retryable: false });
    expect(job.notRetryableReason).toContain(`followed by job ${first.body.data.queueItemId}`);
  });

  it("an old failed placement is not retried once a newer placement made the ad live", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const failedId = await refusedPlacement(model, world);
    await new Publish(0).run(model, world);
    await deliverAll(world);
    const answer = await retry(world, failedId);
    await settle(world);
    await checkInvariants(model, world);
    expect(answer.status).toBe(409);
    expect(codeOf(answer)).toBe("job_not_retryable");
  });

  it("a failed feature is bought again once, whatever the number of retries", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    await deliverAll(world);
    await run(model, world, [new PortalDown(true), new Feature(0), new DeadLetter(0), new PortalDown(false)]);
    const [failed] = await failedJobs(world);
    const failedId = failed?.queueItemId as number;
    expect((await retry(world, failedId)).status).toBe(200);
    await deliverAll(world);
    const second = await retry(world, failedId);
    await settle(world);
    await checkInvariants(model, world);
    expect(second.status).toBe(409);
  });

  it("a retry makes the checks of a fresh call: locked user, archived ad", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    const failedId = await refusedPlacement(model, world);
    await new Lock(true).run(model, world);
    const locked = await retry(world, failedId);
    expect(locked.status).toBe(409);
    expect(codeOf(locked)).toBe("user_locked");
    await new Lock(false).run(model, world);
    await world.env.shard.d1.prepare("UPDATE ads SET status = 'archive' WHERE id = ?").bind(world.adIds[0]).run();
    const archived = await retry(world, failedId);
    expect(archived.status).toBe(409);
    expect(codeOf(archived)).toBe("ad_archived");
    await settle(world);
    await checkInvariants(model, world);
  });

  it("a repeat POST /publish/ decided before the first placement completes becomes a free update", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    // The repeat reads the ad as not yet published, and is held before it queues.
    const atInsert = holdAt(world, (sql) => sql.some((q) => q.includes("INSERT OR IGNORE INTO queue_items")));
    const repeat = new Publish(0).run(model, world);
    await atInsert.reached;
    await deliverAll(world);
    atInsert.release();
    await repeat;
    await settle(world);
    await checkInvariants(model, world);
    const charges = await world.env.shard.d1
      .prepare("SELECT count(*) AS n FROM wallet_entries WHERE user_id = ? AND kind = 'charge'")
      .bind(world.userId)
      .first<{ n: number }>();
    expect(charges?.n).toBe(1);
  });

  it("DELETE /publish/ that read a placement as pending does not cancel it once the consumer claimed it", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    const message = world.queue.shift();
    if (!message) throw new Error("no message");
    // DELETE reads the placement as pending, and is held before it cancels.
    const atCancel = holdAt(world, (sql) => sql.some((q) => q.startsWith('insert into "wallet_entries"')));
    const unpublish = call("DELETE", "/publish/", {
      key,
      env: world.env,
      body: { userId: world.userId, adId: world.adIds[0], portal: "portal_a" },
    });
    await atCancel.reached;
    // The consumer claims it and creates the listing, and is held before it writes the outcome.
    const atOutcome = holdAt(
      world,
      (sql) => sql.some((q) => q.startsWith('update "queue_items"')) && !sql.some((q) => q.includes('from "ads"')),
    );
    const delivery = deliver(world, message);
    await atOutcome.reached;
    atCancel.release();
    const answer = await unpublish;
    atOutcome.release();
    expect(await delivery).toBe(true);
    await settle(world);
    await checkInvariants(model, world);
    // The cancel lost the race: it says so, and nothing was refunded.
    expect(answer.status).toBe(409);
    expect(codeOf(answer)).toBe("ad_not_published");
  });

  it("DELETE then POST /publish/ on a live ad ends published, with a new placement after the unpublish", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    await deliverAll(world);
    await run(model, world, [new Unpublish(0), new Publish(0)]);
    // Delivered newest first: the placement waits for the unpublish queued before it.
    world.queue.reverse();
    await settle(world);
    await checkInvariants(model, world);
    const listings = await world.env.shard.d1
      .prepare("SELECT count(*) AS n FROM queue_items WHERE ad_id = ? AND action = 'publish' AND status = 'done'")
      .bind(world.adIds[0])
      .first<{ n: number }>();
    expect(listings?.n).toBe(2);
  });

  it("an unpublish that fails leaves the placement queued behind it refused and refunded, one listing live", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(0).run(model, world);
    await deliverAll(world);
    // The placement is queued as one because the unpublish before it would take the listing down...
    await run(model, world, [new Unpublish(0), new Publish(0)]);
    // ...but the unpublish's retries run out while the marketplace is down.
    await run(model, world, [new PortalDown(true), new DeadLetter(0), new PortalDown(false)]);
    await settle(world);
    await checkInvariants(model, world);
    const placements = (await call("GET", `/jobs/?userId=${world.userId}&kind=placement&state=error`, { key })).body
      .data;
    expect(placements).toHaveLength(1);
    expect(placements[0]).toMatchObject({ lastError: expect.stringMatching(/still live/), refunded: true });
  });

  it("DELETE /publish/ does not cancel a placement that started before, even when it is pending again after a crash", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    // The consumer created the listing and died before writing it; the cron put the item back to pending.
    await run(model, world, [new Publish(1), new Crash(0), new Recover(), new Unpublish(1)]);
    await settle(world);
    await checkInvariants(model, world);
  });

  it("an unpublish waits for a feature that started: its purchase may be at the marketplace, and is not refunded", async () => {
    const world = await newWorld(key, internalKey);
    const model = newModel();
    await new Publish(1).run(model, world);
    await deliverAll(world);
    // The feature is bought at the marketplace and the consumer dies before writing it; then the ad is taken down.
    await run(model, world, [new Feature(1), new Crash(0), new Unpublish(1)]);
    await deliverAll(world);
    await settle(world);
    await checkInvariants(model, world);
    const features = (await call("GET", `/jobs/?userId=${world.userId}&kind=feature`, { key })).body.data;
    expect(features).toEqual([expect.objectContaining({ state: "done", refunded: false })]);
  });
});
