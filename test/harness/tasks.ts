import { createScheduledController, env } from "cloudflare:test";
import worker from "../../src/index";
import { call, eventually, expectEnvelope } from "./api";
import { createAd } from "./data";
import { connectedSeller } from "./marketplace";

/** Runs the Worker's scheduled handler as the cron would, at a fixed instant. */
export const cronAt = (iso: string) =>
  worker.scheduled(createScheduledController({ scheduledTime: new Date(iso), cron: "* * * * *" }), env);

/** One client's tasks on portal_a: sellers with published ads, their tasks and the runs of each. */
export function clientTasks(key: string, internalKey: string) {
  /** A connected seller with `count` ads active on portal_a. */
  async function sellerWithAds(count: number, credit = 100_000) {
    const userId = await connectedSeller(key, internalKey, credit);
    const adIds: number[] = [];
    for (let i = 0; i < count; i += 1) adIds.push((await createAd(key, userId, { title: `Te bumpen ${i}` })).adId);
    if (count) {
      await call("POST", "/publish/batch", { key, body: { userId, adId: adIds, portal: "portal_a" } });
      await eventually(async () => {
        const answer = await call("POST", "/status/", { key, body: { userId, adId: adIds } });
        return answer.body.data.every(
          (s: { portals: { publish: { active: boolean } }[] }) => s.portals[0]?.publish.active,
        )
          ? true
          : undefined;
      }, "the ads to be published");
    }
    return { userId, adIds };
  }

  async function task(userId: number, body: Record<string, unknown>) {
    const answer = await call("POST", "/tasks/", { key, body: { userId, portal: "portal_a", enabled: true, ...body } });
    expectEnvelope(answer, 200);
    return answer.body.data[answer.body.data.length - 1] as { taskId: number };
  }

  const runs = async (userId: number, taskId: number) =>
    (await call("GET", `/tasks/${userId}/portal_a/${taskId}`, { key })).body.data[0]?.runs as {
      due: string;
      ads: number;
      queued: number;
      skipped: { adId: number; reason: string }[];
      cost: number;
    }[];

  return { sellerWithAds, task, runs };
}
export type ClientTasks = ReturnType<typeof clientTasks>;
