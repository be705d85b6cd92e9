import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { JOB_QUEUES } from "../../src/db/shards";
import type { Env } from "../../src/env";
import { handingJobsToLanes } from "../../src/jobs/handOver";
import { clientLanesOf } from "../../src/services/shared";
import { call, eventually, expectEnvelope, newClient } from "../harness/api";
import { activate, createUser, seedAds } from "../harness/data";
import { publicationTime } from "../harness/marketplace";

/**
 * The shared queues in front of the lanes hold no client's backlog: a request hands its jobs to its
 * client's lanes (src/jobs/handOver.ts), so however many jobs one client queues, what the shared queues
 * hold grows with the clients that have work, not with their jobs.
 */

/** The pool's bindings with job queues that count the messages sent on them (then send them). */
function countingQueues(): { bindings: Env; sent: () => number } {
  let sent = 0;
  const counting = (queue: Queue): Queue => ({
    metrics: () => queue.metrics(),
    send: (body, options) => {
      sent += 1;
      return queue.send(body, options);
    },
    sendBatch: (messages, options) => {
      const all = [...messages];
      sent += all.length;
      return queue.sendBatch(all, options);
    },
  });
  const counted = { ...env, ...Object.fromEntries(JOB_QUEUES.map((name) => [name, counting(env[name])])) } as Env;
  // As the Worker runs the API: its sends handed to the lanes, what they cannot take sent on the queues.
  return { bindings: handingJobsToLanes(counted), sent: () => sent };
}

/** What the shared job queues hold now, together. */
const sharedBacklog = async () =>
  (await Promise.all(JOB_QUEUES.map(async (name) => (await env[name].metrics()).backlogCount))).reduce(
    (sum, n) => sum + n,
    0,
  );

const PUBLISHED = 10_000;
const BATCH = 1_000;

describe("the shared queue", () => {
  it("holds at most a message per client while one client queues 10,000 jobs; another's job runs at its turn", async () => {
    const [a, b] = await Promise.all([newClient({ partner: true }), newClient({ partner: true })]);
    const [aSeller, bSeller] = await Promise.all([createUser(a.key), createUser(b.key)]);
    await Promise.all([activate(a.key, aSeller), activate(b.key, bSeller)]);
    // Every third seeded ad is archived: 15,000 leave 10,000 to publish.
    await seedAds(aSeller.userId, (PUBLISHED * 3) / 2);
    const { results } = await env.DB.prepare("SELECT id FROM ads WHERE user_id = ? AND status = 'active' ORDER BY id")
      .bind(aSeller.userId)
      .all<{ id: number }>();
    const adIds = results.map((row) => row.id);
    expect(adIds).toHaveLength(PUBLISHED);

    const queues = countingQueues();
    let deepest = 0;
    for (let from = 0; from < PUBLISHED; from += BATCH) {
      const answer = await call("POST", "/publish/batch", {
        key: a.key,
        env: queues.bindings,
        body: { userId: aSeller.userId, adId: adIds.slice(from, from + BATCH), portal: "website" },
      });
      expectEnvelope(answer, 200);
      deepest = Math.max(deepest, await sharedBacklog());
    }
    // A's 10,000 jobs wait in A's lanes, not in the shared queues.
    expect(queues.sent(), "messages sent to the shared queues").toBeLessThanOrEqual(2);
    expect(deepest, "the shared queues' deepest backlog").toBeLessThanOrEqual(2);
    const aLanes = clientLanesOf(env, a.client.id);
    expect((await aLanes.waiting()).marketplace).toBeGreaterThan(0);

    // B's publication runs at its turn while A's backlog is still there.
    await publicationTime(b.key, bSeller.userId);
    expect((await aLanes.waiting()).marketplace).toBeGreaterThan(0);

    // Nothing of A's is lost: every job is done once its lanes are empty.
    await eventually(async () => ((await aLanes.waiting()).marketplace === 0 ? true : undefined), "A's lanes to empty");
    const done = await env.DB.prepare("SELECT count(*) AS n FROM queue_items WHERE user_id = ? AND status = 'done'")
      .bind(aSeller.userId)
      .first<{ n: number }>();
    expect(done?.n).toBe(PUBLISHED);
  }, 900_000);
});
