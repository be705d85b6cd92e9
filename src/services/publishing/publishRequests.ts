import { type AnyColumn, and, eq, inArray, ne, sql } from "drizzle-orm";
import { namedBatch, namedBatches } from "../../db/client";
import { inIds, inList } from "../../db/inList";
import { adAttributes, adPublications, ads, publishJobs, userSettings, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { metricsOf } from "../../lib/metrics";
import { nowIso } from "../../lib/time";
import { type Marketplace, PUBLISH_TARGETS, type PublishTarget } from "../../lib/vocabulary";
import { loadCatalogue } from "../catalogue/catalogue";
import { isInternal, userNotFound, visibleUsers } from "../shared/access";
import { jobContextOf, type ServiceContext } from "../shared/context";
import { payerIdOf } from "../wallet/wallet";
import { connectionQuery } from "./connections";
import { decidePublishing, isLive, type PublishDecision, type PublishRequest, type PublishState } from "./decide";
import { noteRefund, transition } from "./jobs/lifecycle";
import { queueJobs } from "./jobs/queue";
import { DELETED_BEFORE_START, type PublishJobRow } from "./jobs/states";
import { accepted, type Outcome, type PublishMode, queuedOutcome, REFUSAL_TEXTS, refused } from "./outcomes";

/** Rows per ad, in the order read. */
function groupByAd<T extends { adId: number }>(rows: T[]): Map<number, T[]> {
  const map = new Map<number, T[]>();
  for (const row of rows) {
    const group = map.get(row.adId);
    if (group) group.push(row);
    else map.set(row.adId, [row]);
  }
  return map;
}

/** batchall with portal `meta`: every ad of the user on every portal in turn, for internal clients only. */
export async function requestPublishingEverywhere(
  ctx: ServiceContext,
  input: { userId: number; images: boolean; mode: Exclude<PublishMode, "update"> },
): Promise<Outcome[]> {
  if (!isInternal(ctx.caller)) throw DomainError.of("internal_only", "portal: meta is for internal clients only");
  const outcomes: Outcome[] = [];
  for (const portal of PUBLISH_TARGETS)
    outcomes.push(
      ...(await requestPublishing(ctx, { ...input, portal, adIds: input.mode === "publish" ? "allActive" : "all" })),
    );
  return outcomes;
}

/**
 * POST/PUT/DELETE /publish/ and the batch forms, as read → decide → write: one batch read of the state
 * (`readPublishState`), the pure `decidePublishing`, and the write of what was decided
 * (`writePublishDecision`). Every ad gets an outcome. A retry runs the same checks as a fresh call.
 */
export async function requestPublishing(
  ctx: ServiceContext,
  input: PublishRequest & { userId: number; charged?: ChargeOf },
): Promise<Outcome[]> {
  const state = await readPublishState(ctx, { ...input, jobs: input.mode === "unpublish" ? "pending" : "none" });
  return writePublishDecision(ctx, input.portal, decidePublishing(state, input), input.charged);
}

/**
 * Told of each charge a publish call made, in cents: a job it queued and paid. An ad whose open job it
 * found (queued and paid by another call), or whose placement became a free update, is not charged by it.
 */
export type ChargeOf = (adId: number, cents: number) => void;

/**
 * Writes a publish call's decision and returns each ad's outcome: first the jobs it withdraws (not
 * started yet: cancelled and refunded; one the consumer claimed meanwhile runs to its end, and an
 * unpublish queued behind it runs after it), then the new jobs (`queueJobs`: exactly once, a placement
 * paid as it is queued, and whether a placement of a live ad becomes an update decided in that
 * transaction).
 */
async function writePublishDecision(
  ctx: ServiceContext,
  portal: PublishTarget,
  decision: PublishDecision,
  charged?: ChargeOf,
): Promise<Outcome[]> {
  const withdrawn = await withdrawPending(ctx, decision.withdraw, nowIso());
  const jobs = decision.ads.flatMap((d) => ("job" in d ? [d.job] : []));
  const queued = await queueJobs(jobContextOf(ctx), jobs);
  const byNewJob = new Map(jobs.map((job, i) => [job, queued[i]]));
  return decision.ads.map((d) => {
    if ("refusal" in d) return d.refusal;
    if ("settledByWithdrawal" in d) {
      const cancelled = withdrawn.get(d.adId);
      return cancelled
        ? accepted(d.adId, cancelled)
        : refused("ad_not_published", portal, d.adId, REFUSAL_TEXTS.ad_not_published);
    }
    const q = byNewJob.get(d.job);
    if (q?.created && q.cost > 0) charged?.(d.adId, q.cost);
    return q
      ? queuedOutcome(portal, d.adId, d.job.action, q)
      : refused("insufficient_means", portal, d.adId, REFUSAL_TEXTS.insufficient_means);
  });
}

/**
 * Everything a publish call decides on, in one D1 round trip: the user (as the caller may see it), its
 * settings, the ads, and their publications, pending jobs and attributes on the target. With
 * `all`/`allActive` the ads' ids are a subquery of the same batch.
 */
export async function readPublishState(
  ctx: ServiceContext,
  input: Pick<PublishRequest, "adIds" | "portal" | "mode"> & {
    userId: number;
    /** Which of the ads' jobs to read: pending ones (an unpublish withdraws them), open ones (a dry run), none. */
    jobs: "pending" | "open" | "none";
  },
): Promise<PublishState> {
  const { db } = ctx;
  const { portal, mode } = input;
  const ownAds = and(
    eq(ads.userId, input.userId),
    Array.isArray(input.adIds)
      ? inList(ads.id, input.adIds)
      : input.adIds === "allActive"
        ? eq(ads.status, "active")
        : undefined,
  );
  const adIdsIn = (column: AnyColumn) =>
    inIds(column, Array.isArray(input.adIds) ? input.adIds : db.select({ id: ads.id }).from(ads).where(ownAds));
  const checksAttributes = portal !== "website" && mode !== "unpublish";
  const { userRows, settingRows, adRows, publications, jobs, connections, attributeRows } = await namedBatch(db, {
    userRows: db
      .select()
      .from(users)
      .where(and(eq(users.id, input.userId), visibleUsers(ctx.caller))),
    settingRows: db
      .select({ status: userSettings.status, walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, input.userId)),
    adRows: db.select().from(ads).where(ownAds),
    // By the primary key (ad, portal); whether it is active is read, not filtered, or the planner would
    // walk `ad_publications_active`, every active listing of the portal.
    publications: db
      .select({ adId: adPublications.adId, active: adPublications.active, closeDate: adPublications.closeDate })
      .from(adPublications)
      .where(and(adIdsIn(adPublications.adId), eq(adPublications.portal, portal))),
    jobs: db
      .select()
      .from(publishJobs)
      .where(
        and(
          adIdsIn(publishJobs.adId),
          eq(publishJobs.portal, portal),
          inArray(publishJobs.status, input.jobs === "open" ? ["pending", "processing"] : ["pending"]),
          // Read only when asked for (a batch cannot leave a statement out by type).
          sql`${input.jobs === "none" ? 0 : 1} = 1`,
        ),
      ),
    connections: // (The website needs no connection; its query finds none.)
      connectionQuery(db, input.userId, portal as Marketplace),
    attributeRows: db
      .select()
      .from(adAttributes)
      .where(
        and(adIdsIn(adAttributes.adId), sql`${adAttributes.portal} = ${portal}`, sql`${checksAttributes ? 1 : 0} = 1`),
      )
      .orderBy(adAttributes.adId, adAttributes.seq),
  });
  const [user] = userRows;
  if (!user) throw userNotFound(input.userId);
  const now = nowIso();
  const [settings] = settingRows;
  return {
    user,
    payerId: payerIdOf(user.id, settings?.walletUserId),
    locked: settings?.status === "locked",
    connected: portal === "website" || (connections[0]?.status ?? false),
    catalogue: await loadCatalogue(db),
    ads: new Map(adRows.map((ad) => [ad.id, ad])),
    active: new Set(publications.filter((p) => p.active).map((p) => p.adId)),
    live: new Set(publications.filter((p) => isLive(p, now)).map((p) => p.adId)),
    attributes: groupByAd(attributeRows),
    connection: connections[0],
    jobs,
  };
}

/**
 * Cancels pending jobs (a client's DELETE before the job started) and refunds them, in one batch; an
 * job the consumer claimed meanwhile, or had started before (pending again after a crash or a transient
 * failure, so maybe already at the marketplace), does not move. Answers, per ad, a job that was cancelled.
 */
async function withdrawPending(
  ctx: ServiceContext,
  jobs: PublishJobRow[],
  now: string,
  reason = "removed before processing",
): Promise<Map<number, number>> {
  const moved = await namedBatches(
    ctx.db,
    jobs.map((job) => transition(ctx.db, job, "cancelled", { now, reason })),
  );
  const cancelled = new Map<number, number>();
  moved.forEach(({ job: [row] }) => {
    if (!row) return;
    noteRefund(metricsOf(ctx.env), "cancelled", row);
    if (!cancelled.has(row.adId)) cancelled.set(row.adId, row.id);
  });
  return cancelled;
}

/**
 * The jobs of deleted ads, or of a deleted user, that never started: cancelled and refunded. An unpublish
 * asked for before the delete, and a job that started (it may be at the marketplace), run or settle to
 * their end (see `runPublishJobs`); a job that never started but was claimed meanwhile ends unpaid there.
 */
export async function withdrawUnstartedJobs(
  ctx: ServiceContext,
  input: ({ adIds: number[] } | { userId: number }) & { reason?: string },
): Promise<void> {
  const jobs = await ctx.db
    .select()
    .from(publishJobs)
    .where(
      and(
        "adIds" in input ? inList(publishJobs.adId, input.adIds) : eq(publishJobs.userId, input.userId),
        eq(publishJobs.status, "pending"),
        eq(publishJobs.attempts, 0),
        ne(publishJobs.action, "unpublish"),
      ),
    );
  await withdrawPending(ctx, jobs, nowIso(), input.reason ?? DELETED_BEFORE_START);
}
