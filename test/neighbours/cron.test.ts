import { createScheduledController, env } from "cloudflare:test";
import { beforeAll, describe, it } from "vitest";
import worker from "../../src/index";
import { newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";
import { expectWithinNeighbourBound, timed } from "./bound";

/**
 * The cron's lanes: due tasks and the update outbox, a limited number of rows a run. B's operation is
 * its work getting done from the minute it was due: a run that passes it over costs B the minute until
 * the next run, a run that does it costs B that run's duration.
 */

let a: string;
let b: string;

beforeAll(async () => {
  [a, b] = await Promise.all([newClient().then((c) => c.key), newClient().then((c) => c.key)]);
});

const MINUTE_MS = 60_000;

/** Runs the cron minute by minute from `firstRun` until `done`; answers B's wait as described above, or fails. */
async function waitForCron(firstRun: Date, done: () => Promise<boolean>): Promise<number> {
  for (let run = 0; run < 15; run += 1) {
    const scheduledTime = new Date(firstRun.getTime() + run * MINUTE_MS);
    const duration = await timed(() =>
      worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), env),
    );
    if (await done()) return run * MINUTE_MS + duration;
  }
  throw new Error("B's work was not done within 15 runs of the cron");
}

const count = async (sql: string, ...values: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...values)
      .first<{ n: number }>()
  )?.n ?? 0;

/** Tasks of a user due at `time` (Amsterdam), written straight to the table, as the API would have. */
const tasksOf = (userId: number, time: string, howMany: number) =>
  env.DB.prepare(
    `INSERT INTO tasks (user_id, portal, time, enabled, created_at) SELECT ?, 'portal_a', ?, 1, ? FROM json_each(?)`,
  )
    // Made the day before the minutes the test runs (a task is due only after it was made).
    .bind(userId, time, "2026-11-26T00:00:00.000Z", JSON.stringify(Array.from({ length: howMany }, () => 0)))
    .run();

const ranTasksOf = (userId: number) =>
  count(
    "SELECT count(*) AS n FROM task_runs JOIN tasks ON tasks.id = task_runs.task_id WHERE tasks.user_id = ?",
    userId,
  );

describe("the cron's due tasks", () => {
  it("B's task due at a minute runs on time beside A's 500 tasks due at the same minute", async () => {
    const light = (await createUser(b)).userId;
    await tasksOf(light, "05:11", 1);
    const alone = await waitForCron(new Date("2026-11-27T04:11:30Z"), async () => (await ranTasksOf(light)) === 1);

    const heavy = await Promise.all(Array.from({ length: 5 }, async () => (await createUser(a)).userId));
    for (const userId of heavy) await tasksOf(userId, "05:12", 100); // each user at its limit of 100
    await tasksOf(light, "05:12", 1);
    const beside = await waitForCron(new Date("2026-11-27T04:12:30Z"), async () => (await ranTasksOf(light)) === 2);
    expectWithinNeighbourBound("B's due task", alone, beside);
  }, 180_000);
});

describe("the update outbox", () => {
  it("B's requested update is queued on time beside A's 2,000 waiting ones", async () => {
    const light = (await createUser(b)).userId;
    const heavy = (await createUser(a)).userId;
    const [heavyAd, lightAd] = [(await createAd(a, heavy)).adId, (await createAd(b, light)).adId];
    const ask = (adId: number, howMany: number) =>
      env.DB.prepare(
        `INSERT INTO ad_update_requests (ad_id, portal, reason) SELECT ?, 'portal_a', 'images' FROM json_each(?)`,
      )
        .bind(adId, JSON.stringify(Array.from({ length: howMany }, () => 0)))
        .run();
    const waiting = () => count("SELECT count(*) AS n FROM ad_update_requests WHERE ad_id = ?", lightAd);

    await ask(lightAd, 1);
    const alone = await waitForCron(new Date("2026-11-27T06:00:30Z"), async () => (await waiting()) === 0);

    await ask(heavyAd, 2_000);
    await ask(lightAd, 1);
    const beside = await waitForCron(new Date("2026-11-27T06:01:30Z"), async () => (await waiting()) === 0);
    expectWithinNeighbourBound("B's requested update", alone, beside);
  }, 180_000);
});
