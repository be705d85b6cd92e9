import { createScheduledController, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { amsterdamDay, amsterdamToUtc } from "../../src/lib/time";
import { call, expectError, newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";

/**
 * The cron's shared lanes take a limited number of rows a run: due tasks (50) and the update outbox
 * (200). They take them by turns of client, so one client's volume never holds another's row back.
 */

let a: string;
let b: string;

beforeAll(async () => {
  [a, b] = await Promise.all([newClient().then((c) => c.key), newClient().then((c) => c.key)]);
});

const cronAt = (at: Date) => worker.scheduled(createScheduledController({ scheduledTime: at, cron: "* * * * *" }), env);
/** Tomorrow at hh:mm in Amsterdam (then + seconds): a time after the tasks are made, whenever the test runs. */
const tomorrowAt = (hh: number, mm: number, seconds = 30) =>
  new Date(amsterdamToUtc(amsterdamDay(new Date(Date.now() + 86_400_000)).date, hh, mm).getTime() + seconds * 1000);

const count = async (sql: string, ...values: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...values)
      .first<{ n: number }>()
  )?.n ?? 0;

describe("fair shares of the cron's lanes", () => {
  it("runs another client's due task in the first run, whatever one client has due at that minute", async () => {
    const heavy = (await createUser(a)).userId;
    const light = (await createUser(b)).userId;
    const task = { portal: "portal_a", time: "04:17", enabled: true };
    for (let i = 0; i < 60; i += 1) {
      const answer = await call("POST", "/tasks/", { key: a, body: { ...task, userId: heavy } });
      expect(answer.status).toBe(200);
    }
    await call("POST", "/tasks/", { key: b, body: { ...task, userId: light } });

    await cronAt(tomorrowAt(4, 17));
    const runsOf = (userId: number) =>
      count(
        "SELECT count(*) AS n FROM task_runs JOIN tasks ON tasks.id = task_runs.task_id WHERE tasks.user_id = ?",
        userId,
      );
    expect(await runsOf(light)).toBe(1);
    // The lane was full: some of the heavy client's tasks wait for the next run.
    expect(await runsOf(heavy)).toBeLessThan(60);
    await cronAt(tomorrowAt(4, 18));
    expect(await runsOf(heavy)).toBe(60);
  });

  it("takes another client's requested update in the first run, whatever one client has waiting", async () => {
    const heavy = (await createUser(a)).userId;
    const light = (await createUser(b)).userId;
    const [heavyAd, lightAd] = [(await createAd(a, heavy)).adId, (await createAd(b, light)).adId];
    const ask = env.DB.prepare(
      "INSERT INTO ad_update_requests (ad_id, portal, reason) VALUES (?, 'portal_a', 'images')",
    );
    await env.DB.batch(Array.from({ length: 250 }, () => ask.bind(heavyAd)));
    await ask.bind(lightAd).run();

    await cronAt(tomorrowAt(6, 0));
    const waiting = (adId: number) => count("SELECT count(*) AS n FROM ad_update_requests WHERE ad_id = ?", adId);
    expect(await waiting(lightAd)).toBe(0);
    expect(await waiting(heavyAd)).toBeGreaterThan(0);
  });

  it("holds a user to 100 tasks per portal, so one user's tasks are a bounded part of the lane", async () => {
    const userId = (await createUser(a)).userId;
    const task = (portal: string) => ({ userId, portal, time: "06:00", enabled: false });
    for (let i = 0; i < 100; i += 1)
      expect((await call("POST", "/tasks/", { key: a, body: task("portal_a") })).status).toBe(200);
    const over = await call("POST", "/tasks/", { key: a, body: task("portal_a") });
    expectError(over, "task_limit_reached");
    expect(over.body.errorDetails).toEqual([
      {
        code: "task_limit_reached",
        field: "portal",
        message: `portal: user ${userId} has 100 tasks on portal_a, the most a user may have; remove one first`,
      },
    ]);
    expect((await call("POST", "/tasks/", { key: a, body: task("portal_b") })).status).toBe(200);
  });

  it("holds the limit under parallel creates: with 95 tasks, 10 at once store 5 and refuse 5", async () => {
    const userId = (await createUser(a)).userId;
    const task = { userId, portal: "portal_a", time: "07:00", enabled: false };
    for (let i = 0; i < 95; i += 1) expect((await call("POST", "/tasks/", { key: a, body: task })).status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => call("POST", "/tasks/", { key: a, body: task })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array(5).fill(200), ...Array(5).fill(409)]);
    for (const refused of answers.filter((answer) => answer.status !== 200)) expectError(refused, "task_limit_reached");
    expect(await count("SELECT count(*) AS n FROM tasks WHERE user_id = ? AND portal = 'portal_a'", userId)).toBe(100);
  });
});
