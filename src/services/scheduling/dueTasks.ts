import { and, eq, sql } from "drizzle-orm";
import { settledClient } from "../../db/directory";
import { byTurns } from "../../db/fairShare";
import { groupOfUser, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import { adPublications, ads, taskRuns, tasks, users } from "../../db/schema";
import { amsterdamDay, amsterdamToUtc } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import type { FeatureName } from "../catalogue/features";
import { eventOf } from "../events/events";
import { queueFeature } from "../publishing/features";
import type { JobContext } from "../shared/context";

/** A cron invocation at most this late still runs the tasks it missed. */
export const CATCH_UP_MS = 10 * 60_000;

const featureOf = (taskFeature: string): FeatureName =>
  taskFeature === "upcall" ? "omhoogplaatsen" : (taskFeature as FeatureName);
const hhmm = (instant: Date) => instant.toISOString().slice(11, 16);

/**
 * Runs the enabled tasks due in (now − 10 min, now], Amsterdam time, each due minute at most once:
 * a run row with a unique run key is claimed before the work, so a second or late cron finds it taken.
 * At most `limit` runs per call, taken by turns of client; the rest are still due next minute.
 */
export async function runDueTasks(ctx: JobContext, input: { limit: number }) {
  const { db, now } = ctx;
  const { limit } = input;
  const from = now.getTime() - CATCH_UP_MS;
  // Amsterdam is UTC+1 or UTC+2: the wall-clock times the window can hold, under either offset.
  const times = new Set<string>();
  for (let t = Math.floor(from / 60_000) * 60_000; t <= now.getTime(); t += 60_000) {
    for (const hours of [1, 2]) times.add(hhmm(new Date(t + hours * 3_600_000)));
  }
  const candidates = (
    await db
      .select({ task: tasks })
      .from(tasks)
      .innerJoin(users, eq(users.id, tasks.userId))
      .where(and(eq(tasks.enabled, true), inList(tasks.time, [...times]), settledClient(users.clientId)))
      .orderBy(...byTurns(users.clientId, tasks.id))
  ).map((row) => row.task);
  const dates = [...new Set([amsterdamDay(new Date(from)), amsterdamDay(now)].map((d) => JSON.stringify(d)))].map(
    (d) => JSON.parse(d) as { date: string; weekday: string },
  );
  const runs = [];
  for (const task of candidates) {
    for (const { date, weekday } of dates) {
      if (runs.length >= limit) return runs;
      const [hh, mm] = task.time.split(":").map(Number) as [number, number];
      const dueAt = amsterdamToUtc(date, hh, mm);
      if (dueAt.getTime() <= from || dueAt > now || dueAt.toISOString() < task.createdAt) continue;
      if (task.dayOfWeek && !(task.dayOfWeek as string[]).includes(weekday)) continue;
      const claimed = await db
        .insert(taskRuns)
        .values({
          id: nextId(taskRuns, groupOfUser(task.userId)),
          taskId: task.id,
          runKey: `${task.id}@${date}T${task.time}`,
          dueAt: dueAt.toISOString(),
        })
        .onConflictDoNothing()
        .returning({ id: taskRuns.id });
      if (!claimed[0]) continue;
      runs.push(await runTask(ctx, task, claimed[0].id));
    }
  }
  return runs;
}

async function runTask(ctx: JobContext, task: typeof tasks.$inferSelect, runId: number) {
  const { db } = ctx;
  const portal = task.portal as Marketplace;
  const targets = task.adIds.length
    ? await db
        .select()
        .from(ads)
        .where(and(eq(ads.userId, task.userId), inList(ads.id, task.adIds)))
    : (
        await db
          .select({ ad: ads })
          .from(ads)
          .innerJoin(adPublications, and(eq(adPublications.adId, ads.id), eq(adPublications.portal, portal)))
          .where(and(eq(ads.userId, task.userId), eq(ads.status, "active"), eq(adPublications.active, true)))
      ).map((row) => row.ad);
  let queued = 0;
  let cost = 0;
  const skipped: { adId: number; reason: string }[] = [];
  for (const ad of targets) {
    const result = await queueFeature(ctx, { ad, portal, feature: featureOf(task.feature) });
    if (result.outcome.result) {
      queued += 1;
      cost += result.cost;
    } else {
      skipped.push({
        adId: ad.id,
        reason: (result.outcome.errors[0] ?? "").replace(/^portal: \S+ - adId: \d+ - /, ""),
      });
    }
  }
  await db.batch([
    db.update(taskRuns).set({ ads: targets.length, queued, skipped, cost }).where(eq(taskRuns.id, runId)),
    eventOf(db, {
      type: "task.run",
      userId: task.userId,
      portal,
      data: sql`json_object('taskId', ${task.id}, 'feature', ${task.feature}, 'ads', ${targets.length}, 'queued', ${queued}, 'skipped', ${skipped.length}, 'cost', ${cost})`,
    }),
  ]);
  return { taskId: task.id, ads: targets.length, queued, skipped: skipped.length, cost };
}
