import { and, asc, count, desc, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import { ads, taskRuns, tasks, type WEEKDAYS } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { formatDateTime, nowIso } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { requireUnchanged } from "../shared/fixedFields";
import { bumpRevisions, userWriteRevisions } from "../shared/revisions";
import { TaskFeature } from "./schemas";

type TaskRow = typeof tasks.$inferSelect;
type Weekday = (typeof WEEKDAYS)[number];

export interface TaskInput {
  userId: number;
  portal: Marketplace;
  time: string;
  dayOfWeek?: Weekday[] | null | undefined;
  adId?: number[] | undefined;
  feature?: string | undefined;
  enabled: boolean;
}

const runView = (row: typeof taskRuns.$inferSelect) => ({
  due: formatDateTime(row.dueAt),
  ads: row.ads,
  queued: row.queued,
  skipped: row.skipped,
  cost: row.cost,
});

const taskView = (row: TaskRow, runs?: (typeof taskRuns.$inferSelect)[]) => ({
  taskId: row.id,
  userId: row.userId,
  portal: row.portal,
  adId: row.adIds,
  time: row.time,
  dayOfWeek: row.dayOfWeek ?? [],
  // Only a validated write stores it: read back in the write's own terms.
  feature: TaskFeature.parse(row.feature),
  enabled: row.enabled,
  ...(runs ? { runs: runs.map(runView) } : {}),
});
export type TaskView = ReturnType<typeof taskView>;

/** Task ads must be the user's own. */
async function checkAds(db: Db, userId: number, adIds: number[] | undefined) {
  if (!adIds?.length) return;
  const owned = await db
    .select({ id: ads.id })
    .from(ads)
    .where(and(eq(ads.userId, userId), inList(ads.id, adIds)));
  const missing = adIds.filter((id) => !owned.some((o) => o.id === id));
  if (missing.length > 0)
    throw DomainError.of("reference_not_found", ...missing.map((id) => `adId: ad ${id} not found for user ${userId}`));
}

async function allTasks(db: Db, userId: number): Promise<TaskView[]> {
  return (await db.select().from(tasks).where(eq(tasks.userId, userId)).orderBy(asc(tasks.id))).map((row) =>
    taskView(row),
  );
}

export async function listTasks(
  ctx: ServiceContext,
  query: {
    userId: number;
    portal?: Marketplace | undefined;
    taskId?: number | undefined;
    page: number;
    itemsPerPage: number;
  },
): Promise<Page<TaskView>> {
  const { db, caller } = ctx;
  await requireUser(db, caller, query.userId);
  const where = and(
    eq(tasks.userId, query.userId),
    query.portal ? eq(tasks.portal, query.portal) : undefined,
    query.taskId ? eq(tasks.id, query.taskId) : undefined,
  );
  const {
    total: [total],
    rows,
  } = await namedBatch(db, {
    total: db.select({ n: count() }).from(tasks).where(where),
    rows: db
      .select()
      .from(tasks)
      .where(where)
      .orderBy(asc(tasks.id))
      .limit(query.itemsPerPage)
      .offset((query.page - 1) * query.itemsPerPage),
  });
  if (query.taskId) {
    const task = rows[0];
    if (!task) throw DomainError.of("task_not_found", `taskId: task ${query.taskId} not found`);
    // One task: with its recent runs.
    const runs = await db
      .select()
      .from(taskRuns)
      .where(eq(taskRuns.taskId, task.id))
      .orderBy(desc(taskRuns.dueAt))
      .limit(20);
    return { items: [taskView(task, runs)], totalItems: 1, page: 1, itemsPerPage: query.itemsPerPage };
  }
  return {
    items: rows.map((row) => taskView(row)),
    totalItems: total?.n ?? 0,
    page: query.page,
    itemsPerPage: query.itemsPerPage,
  };
}

/** Tasks a user may have on one portal: the cron's due tasks are a shared lane (docs/operating.md). */
export const MAX_TASKS_PER_PORTAL = 100;

export async function createTask(ctx: ServiceContext, input: TaskInput): Promise<TaskView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await checkAds(db, input.userId, input.adId);
  // One conditional insert: parallel creates cannot all read 99 and each add one.
  const held = db
    .select({ n: count() })
    .from(tasks)
    .where(and(eq(tasks.userId, input.userId), eq(tasks.portal, input.portal)));
  const { created } = await namedBatch(db, {
    created: db
      .insert(tasks)
      .select(
        db
          .select({
            id: sql<number>`${nextId(tasks, groupOfUser(input.userId))}`.as("id"),
            userId: sql<number>`${input.userId}`.as("user_id"),
            portal: sql<Marketplace>`${input.portal}`.as("portal"),
            feature: sql<string>`${input.feature ?? "upcall"}`.as("feature"),
            time: sql<string>`${input.time}`.as("time"),
            dayOfWeek: sql<string | null>`${input.dayOfWeek?.length ? JSON.stringify(input.dayOfWeek) : null}`.as(
              "day_of_week",
            ),
            adIds: sql<string>`${JSON.stringify(input.adId ?? [])}`.as("ad_ids"),
            enabled: sql<number>`${input.enabled ? 1 : 0}`.as("enabled"),
            createdAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("created_at"),
            updatedAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("updated_at"),
          })
          .from(sql`(SELECT 1)`)
          .where(sql`(${held}) < ${MAX_TASKS_PER_PORTAL}`),
      )
      .returning({ id: tasks.id }),
    revisions: bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  });
  if (created.length === 0)
    throw DomainError.of(
      "task_limit_reached",
      `portal: user ${input.userId} has ${MAX_TASKS_PER_PORTAL} tasks on ${input.portal}, the most a user may have; remove one first`,
    );
  return allTasks(db, input.userId);
}

async function requireTask(db: Db, userId: number, taskId: number, portal?: Marketplace): Promise<TaskRow> {
  const row = await db
    .select()
    .from(tasks)
    .where(and(eq(tasks.id, taskId), eq(tasks.userId, userId), portal ? eq(tasks.portal, portal) : undefined))
    .get();
  if (!row) throw DomainError.of("task_not_found", `taskId: task ${taskId} not found`);
  return row;
}

export async function updateTask(
  ctx: ServiceContext,
  input: Partial<Omit<TaskInput, "userId">> & { taskId: number; userId: number },
): Promise<TaskView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  requireUnchanged(input, await requireTask(db, input.userId, input.taskId), ["portal"]);
  await checkAds(db, input.userId, input.adId);
  const changes: Partial<typeof tasks.$inferInsert> = { updatedAt: nowIso() };
  if (input.time !== undefined) changes.time = input.time;
  if (input.dayOfWeek !== undefined) changes.dayOfWeek = input.dayOfWeek?.length ? input.dayOfWeek : null;
  if (input.adId !== undefined) changes.adIds = input.adId;
  if (input.feature !== undefined) changes.feature = input.feature;
  if (input.enabled !== undefined) changes.enabled = input.enabled;
  await db.batch([
    db.update(tasks).set(changes).where(eq(tasks.id, input.taskId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return allTasks(db, input.userId);
}

export async function deleteTask(
  ctx: ServiceContext,
  input: { taskId: number; userId: number; portal: Marketplace },
): Promise<TaskView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await requireTask(db, input.userId, input.taskId, input.portal);
  await db.batch([
    db.delete(tasks).where(eq(tasks.id, input.taskId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return allTasks(db, input.userId);
}
