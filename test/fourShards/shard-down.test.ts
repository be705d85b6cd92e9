import { applyD1Migrations, createScheduledController, env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { runScheduledOnEveryShard } from "../../src/cron";
import { shardDatabase, shardNumbers } from "../../src/db/shards";
import worker from "../../src/index";
import { call, expectEnvelope, newClient } from "../harness/api";
import { createUser } from "../harness/data";

/**
 * A platform of four shards (DB, DB_2, DB_3, DB_4: npm run test:four-shards) whose fourth shard's
 * database fails: the cron runs each shard's minute in that shard's own object (src/cron/shardCron.ts),
 * so the other shards' scheduled work and requests go on.
 */

const SHARDS = [1, 2, 3, 4];

beforeAll(async () => {
  // The pool's setup migrates the directory and the first two shards; these two are this suite's.
  await Promise.all([3, 4].map((shard) => applyD1Migrations(shardDatabase(env, shard), env.TEST_MIGRATIONS)));
});

const database = (shard: number) => shardDatabase(env, shard);

/** A task of a user due at `time` (Amsterdam), written to its shard as the API would have the day before. */
const dueTask = (shard: number, userId: number, time: string) =>
  database(shard)
    .prepare("INSERT INTO tasks (user_id, portal, time, enabled, created_at) VALUES (?, 'portal_a', ?, 1, ?)")
    .bind(userId, time, "2026-11-26T00:00:00.000Z")
    .run();

const runsOf = async (shard: number, userId: number) =>
  (
    await database(shard)
      .prepare("SELECT count(*) AS n FROM task_runs JOIN tasks ON tasks.id = task_runs.task_id WHERE tasks.user_id = ?")
      .bind(userId)
      .first<{ n: number }>()
  )?.n ?? 0;

const cronAt = (iso: string) =>
  worker.scheduled(createScheduledController({ scheduledTime: new Date(iso), cron: "* * * * *" }), env);

describe("four shards, one of them failing", () => {
  it("the others' scheduled work and requests go on; the failing shard catches up once it answers", async () => {
    expect(shardNumbers(env)).toEqual(SHARDS);
    const sellers = await Promise.all(
      SHARDS.map(async (shard) => {
        const { key } = await newClient({ partner: true, shard });
        const { userId } = await createUser(key);
        await dueTask(shard, userId, "05:11");
        return { shard, key, userId };
      }),
    );

    // Shard 4's database fails every query of the tasks: its table is gone while the minute runs.
    await database(4).prepare("ALTER TABLE tasks RENAME TO tasks_unreachable").run();
    try {
      await cronAt("2026-11-27T04:11:30Z");
      for (const { shard, userId } of sellers.slice(0, 3))
        expect(await runsOf(shard, userId), `shard ${shard}`).toBe(1);
      // Requests on the other shards go on meanwhile; shard 4's own fail.
      for (const { key, userId } of sellers.slice(0, 3))
        expectEnvelope(await call("GET", `/tasks/${userId}/portal_a/`, { key }), 200);
      const [, , , down] = sellers as [unknown, unknown, unknown, (typeof sellers)[number]];
      expect((await call("GET", `/tasks/${down.userId}/portal_a/`, { key: down.key })).status).toBe(500);
    } finally {
      await database(4).prepare("ALTER TABLE tasks_unreachable RENAME TO tasks").run();
    }

    // A minute later shard 4 answers again: its task, due within the catch-up window, runs; the others'
    // ran once.
    await cronAt("2026-11-27T04:12:30Z");
    for (const { shard, userId } of sellers) expect(await runsOf(shard, userId), `shard ${shard}`).toBe(1);
  }, 120_000);

  it("a shard's minute runs in its own object: one that finds the last one still running there is skipped", async () => {
    const [first, second] = await Promise.all([
      runScheduledOnEveryShard(env, Date.parse("2026-11-27T05:00:30Z")),
      runScheduledOnEveryShard(env, Date.parse("2026-11-27T05:01:30Z")),
    ]);
    for (const shard of SHARDS) {
      const minutes = [first, second].map((summaries) => summaries.find((summary) => summary.shard === shard));
      expect(
        minutes.map((minute) => minute?.skipped === undefined),
        `shard ${shard}`,
      ).toContain(true);
      expect(minutes.filter((minute) => minute?.skipped?.includes("is still running"))).toHaveLength(1);
    }
  });
});
