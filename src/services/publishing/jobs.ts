import { and, desc, eq, type SQL, sql } from "drizzle-orm";
import { queueItems, users } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { formatDateTime } from "../../lib/time";
import { requireUser, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { queueIntents } from "./intents";
import { type ItemKind, type ItemState, JOB_KINDS, type QueueItem } from "./lifecycle";
import type { PublishPortal } from "./types";
export type JobKind = (typeof JOB_KINDS)[ItemKind];

const refunded = sql<number>`EXISTS (SELECT 1 FROM wallet_entries w WHERE w.queue_item_id = ${queueItems.id} AND w.kind = 'refund')`;

export const jobView = (row: QueueItem & { refunded: number | boolean }) => ({
  queueItemId: row.id,
  userId: row.userId,
  adId: row.adId,
  portal: row.portal,
  kind: JOB_KINDS[row.action],
  feature: row.feature,
  state: row.status,
  attempts: row.attempts,
  lastError: row.reason,
  cost: row.cost,
  refunded: Boolean(row.refunded),
  retryOf: row.retryOf,
  created: formatDateTime(row.createdAt),
  updated: formatDateTime(row.updatedAt),
});
export type JobView = ReturnType<typeof jobView>;

const jobNotFound = (id: number) => DomainError.of("job_not_found", `queueItemId: job ${id} not found`);

/** The item if the caller may see it (its user is the client's, or the caller is internal). */
async function findJob(ctx: ServiceContext, id: number) {
  const row = await ctx.db
    .select({ item: queueItems, refunded })
    .from(queueItems)
    .innerJoin(users, eq(users.id, queueItems.userId))
    .where(and(eq(queueItems.id, id), visibleUsers(ctx.caller)))
    .get();
  if (!row) throw jobNotFound(id);
  return { ...row.item, refunded: row.refunded };
}

export async function getJob(ctx: ServiceContext, id: number): Promise<JobView> {
  return jobView(await findJob(ctx, id));
}

export interface JobFilter {
  userId?: number;
  adId?: number;
  portal?: PublishPortal;
  state?: ItemState;
  kind?: JobKind;
  page: number;
  itemsPerPage: number;
}

/** Jobs, newest first: a client's own users' (or one user's); internal clients see every user's. */
export async function listJobs(ctx: ServiceContext, filter: JobFilter): Promise<Page<JobView>> {
  const { db } = ctx;
  if (filter.userId !== undefined) await requireUser(db, ctx.caller, filter.userId);
  const action = filter.kind
    ? (Object.entries(JOB_KINDS).find(([, kind]) => kind === filter.kind)?.[0] as ItemKind)
    : undefined;
  const where = and(
    visibleUsers(ctx.caller),
    filter.userId !== undefined ? eq(queueItems.userId, filter.userId) : undefined,
    filter.adId !== undefined ? eq(queueItems.adId, filter.adId) : undefined,
    filter.portal ? eq(queueItems.portal, filter.portal) : undefined,
    filter.state ? eq(queueItems.status, filter.state) : undefined,
    action ? eq(queueItems.action, action) : undefined,
  ) as SQL;
  const [[total], rows] = await db.batch([
    db
      .select({ n: sql<number>`count(*)` })
      .from(queueItems)
      .innerJoin(users, eq(users.id, queueItems.userId))
      .where(where),
    db
      .select({ item: queueItems, refunded })
      .from(queueItems)
      .innerJoin(users, eq(users.id, queueItems.userId))
      .where(where)
      .orderBy(desc(queueItems.id))
      .limit(filter.itemsPerPage)
      .offset((filter.page - 1) * filter.itemsPerPage),
  ]);
  return {
    items: rows.map((row) => jobView({ ...row.item, refunded: row.refunded })),
    totalItems: total?.n ?? 0,
    page: filter.page,
    itemsPerPage: filter.itemsPerPage,
  };
}

/**
 * POST /jobs/<id>/retry: a failed item is queued again as a new item (`retryOf` names the failed one)
 * with the same marketplace reference, so a placement that did reach the marketplace is not made twice.
 * It is charged again only when its charge was given back.
 */
export async function retryJob(ctx: ServiceContext, id: number): Promise<JobView> {
  const failed = await findJob(ctx, id);
  if (failed.status !== "error")
    throw DomainError.of(
      "job_not_retryable",
      `queueItemId: only a failed job can be retried; job ${id} is ${failed.status}`,
    );
  const [queued] = await queueIntents(
    ctx.db,
    ctx.env,
    [
      {
        adId: failed.adId,
        userId: failed.userId,
        portal: failed.portal,
        action: failed.action,
        feature: failed.feature,
        images: failed.images,
        cost: failed.refunded ? failed.cost : 0,
        payerId: failed.payerId ?? failed.userId,
        description: `retry of job ${id}: ${JOB_KINDS[failed.action]} ${failed.portal} adId ${failed.adId}`,
        externalRef: failed.externalRef ?? undefined,
        retryOf: id,
      },
    ],
    ctx.requestId,
  );
  if (!queued)
    throw DomainError.of("insufficient_means", `portal: ${failed.portal} - adId: ${failed.adId} - insufficient means`);
  return getJob(ctx, queued.itemId);
}
