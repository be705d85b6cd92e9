import { and, desc, eq, type SQL, sql } from "drizzle-orm";
import { namedBatch } from "../../../db/client";
import { publishJobs, users } from "../../../db/schema";
import type { Page } from "../../../lib/envelope";
import { DomainError, fieldOf } from "../../../lib/errors";
import { formatDateTime } from "../../../lib/time";
import { actionOfKind, JOB_KINDS, type JobKind, type PublishTarget } from "../../../lib/vocabulary";
import { isFeatureName } from "../../catalogue/features";
import { requireUserHistory, usersWithHistory } from "../../shared/access";
import type { ServiceContext } from "../../shared/context";
import { requestFeature } from "../features";
import { requestPublishing } from "../publishRequests";
import { sameListingOrFeature } from "./lifecycle";
import type { JobState, PublishJobRow } from "./states";

const refunded = sql<number>`EXISTS (SELECT 1 FROM wallet_entries w WHERE w.queue_item_id = ${publishJobs.id} AND w.kind = 'refund')`;
/** The first later job of the same listing (placement, update, unpublish) or of the same feature: it took this one's place. */
const laterJob = sql<number | null>`(SELECT n.id FROM queue_items n WHERE ${sameListingOrFeature("n", publishJobs)}
  AND n.id > ${publishJobs.id} ORDER BY n.id LIMIT 1)`;
/** What the job view reads beside the job. */
export const jobColumns = { refunded, laterJob };
type JobRow = PublishJobRow & { refunded: number | boolean; laterJob: number | null };

/**
 * Whether POST /jobs/<id>/retry can queue the job again, and if not why: only the newest failed job of
 * its listing (or feature) is retried. The checks of a fresh call (locked user, archived ad, connection,
 * funds, a listing already live) run when the retry is asked for.
 */
function retryBlocker(row: JobRow): string | null {
  if (row.status !== "error") return `only a failed job can be retried; job ${row.id} is ${row.status}`;
  if (row.laterJob !== null) return `job ${row.id} was followed by job ${row.laterJob}; retry that one`;
  return null;
}

export const jobView = (row: JobRow) => ({
  queueItemId: row.id,
  userId: row.userId,
  adId: row.adId,
  portal: row.portal,
  kind: JOB_KINDS[row.action],
  feature: row.feature,
  state: row.status,
  attempts: row.attempts,
  lastError: row.reason,
  lastErrorField: (row.reason && fieldOf(row.reason)) ?? null,
  cost: row.cost,
  refunded: Boolean(row.refunded),
  retryOf: row.retryOf,
  remoteAdId: row.remoteAdId,
  retryable: retryBlocker(row) === null,
  notRetryableReason: retryBlocker(row),
  waitingSince: row.waitingSince === null ? null : formatDateTime(row.waitingSince),
  created: formatDateTime(row.createdAt),
  updated: formatDateTime(row.updatedAt),
});
export type JobView = ReturnType<typeof jobView>;

const jobNotFound = (id: number) => DomainError.of("job_not_found", `queueItemId: job ${id} not found`);

/** The job if the caller may see it (its user is the client's, or the caller is internal). */
async function findJob(ctx: ServiceContext, id: number) {
  const row = await ctx.db
    .select({ job: publishJobs, ...jobColumns })
    .from(publishJobs)
    .innerJoin(users, eq(users.id, publishJobs.userId))
    .where(and(eq(publishJobs.id, id), usersWithHistory(ctx.caller)))
    .get();
  if (!row) throw jobNotFound(id);
  return { ...row.job, refunded: row.refunded, laterJob: row.laterJob };
}

export async function getJob(ctx: ServiceContext, id: number): Promise<JobView> {
  return jobView(await findJob(ctx, id));
}

export interface JobFilter {
  userId?: number;
  adId?: number;
  portal?: PublishTarget;
  state?: JobState;
  kind?: JobKind;
  page: number;
  itemsPerPage: number;
}

/**
 * Jobs, newest first: a client's own users' (or one user's); internal clients see every user's, deleted
 * users' included (what was charged and refunded stays on the books).
 */
export async function listJobs(ctx: ServiceContext, filter: JobFilter): Promise<Page<JobView>> {
  const { db } = ctx;
  if (filter.userId !== undefined) await requireUserHistory(db, ctx.caller, filter.userId);
  const action = filter.kind ? actionOfKind(filter.kind) : undefined;
  const where = and(
    usersWithHistory(ctx.caller),
    filter.userId !== undefined ? eq(publishJobs.userId, filter.userId) : undefined,
    filter.adId !== undefined ? eq(publishJobs.adId, filter.adId) : undefined,
    filter.portal ? eq(publishJobs.portal, filter.portal) : undefined,
    filter.state ? eq(publishJobs.status, filter.state) : undefined,
    action ? eq(publishJobs.action, action) : undefined,
  ) as SQL;
  const {
    total: [total],
    rows,
  } = await namedBatch(db, {
    total: db
      .select({ n: sql<number>`count(*)` })
      .from(publishJobs)
      .innerJoin(users, eq(users.id, publishJobs.userId))
      .where(where),
    rows: db
      .select({ job: publishJobs, ...jobColumns })
      .from(publishJobs)
      .innerJoin(users, eq(users.id, publishJobs.userId))
      .where(where)
      .orderBy(desc(publishJobs.id))
      .limit(filter.itemsPerPage)
      .offset((filter.page - 1) * filter.itemsPerPage),
  });
  return {
    items: rows.map((row) => jobView({ ...row.job, refunded: row.refunded, laterJob: row.laterJob })),
    totalItems: total?.n ?? 0,
    page: filter.page,
    itemsPerPage: filter.itemsPerPage,
  };
}

/**
 * POST /jobs/<id>/retry: the newest failed job of its listing (or feature) is asked for again, as a new
 * job (`retryOf` names the failed one) with the checks and price of a fresh call, so a retry is never
 * charged twice for one failure nor run for a listing that is live again or was changed since. It keeps
 * the failed placement's marketplace reference, so a placement that did reach the marketplace is not
 * made twice. Parallel retries of one job answer the same new job.
 */
export async function retryJob(ctx: ServiceContext, id: number): Promise<JobView> {
  const failed = await findJob(ctx, id);
  const blocker = retryBlocker(failed);
  if (blocker) throw DomainError.of("job_not_retryable", `queueItemId: ${blocker}`);
  const retry = { retryOf: id, externalRef: failed.externalRef ?? undefined };
  const { action, feature, portal } = failed;
  const outcome =
    action === "feature"
      ? portal === "website" || !isFeatureName(feature)
        ? undefined
        : await requestFeature(ctx, { adId: failed.adId, portal, feature, retry })
      : (
          await requestPublishing(ctx, {
            userId: failed.userId,
            adIds: [failed.adId],
            portal: failed.portal,
            images: failed.images,
            mode: action,
            retry,
          })
        )[0];
  if (!outcome) throw DomainError.of("job_not_retryable", `queueItemId: job ${id} is not retryable`);
  if (!outcome.result || outcome.queueItemId === undefined) throw new DomainError(outcome.errorDetails);
  return getJob(ctx, outcome.queueItemId);
}
