import { and, eq, getTableColumns, inArray, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { type Db, namedBatches } from "../../../db/client";
import { groupOfUser, nextId } from "../../../db/ids";
import { adFeatures, adPublications, publishJobs, walletEntries } from "../../../db/schema";
import type { Metrics } from "../../../lib/metrics";
import type { JobAction } from "../../../lib/vocabulary";
import { ADS_REVISION, bumpRevisions } from "../../shared/revisions";
import { eventOfTransition, waitEvents } from "./events";
import { type EventDetail, JOB_TRANSITIONS, type JobEvent, type JobRef, movedNow, type PublishJobRow } from "./states";

/**
 * The publication state machine, in one place: what each event of a job does to the job, to
 * the publication flags of `/status/` (placement, update, unpublish) or to the feature flags, to the
 * wallet, and which event it writes to the event log. The state-machine table of docs/publishing.md is
 * this file in prose.
 */

type PublicationChange = Partial<typeof adPublications.$inferInsert>;
type FeatureChange = Partial<typeof adFeatures.$inferInsert>;

/**
 * What an event does to the publication, per kind (features leave it alone), in two parts: `listing`,
 * the facts of the marketplace listing a job's success establishes (live or not, its id and dates),
 * written whichever job is the publication's current one, since jobs of one listing run in order; and
 * `job`, the flags of the job a client follows (pending, processing, error), written only while the
 * job is the publication's current one.
 */
export function publicationChange(
  kind: JobAction,
  event: JobEvent,
  detail: EventDetail,
): { listing: PublicationChange | null; job: PublicationChange } | null {
  if (kind === "feature") return null;
  switch (event) {
    case "started":
      return { listing: null, job: { processing: true, processingDate: detail.now } };
    case "retrying":
      return { listing: null, job: { processing: false } };
    case "cancelled":
    case "superseded":
      return { listing: null, job: { pending: false, processing: false } };
    case "failed":
      return {
        listing: null,
        job: {
          pending: false,
          processing: false,
          error: true,
          errorReason: detail.reason ?? null,
          ...(kind === "publish" ? { clientResult: false } : {}),
        },
      };
    case "succeeded": {
      const job = { pending: false, processing: false, error: false, errorReason: null, clientResult: true };
      if (kind === "unpublish") return { listing: { active: false, online: false }, job };
      const outcome = detail.outcome ?? {};
      if (kind === "update")
        return {
          listing: { online: outcome.online ?? true, ...(outcome.closeDate ? { closeDate: outcome.closeDate } : {}) },
          job,
        };
      // Only a placement makes a listing: an update keeps the listing's id and start. A new listing does
      // not keep the close date of the one it replaces.
      return {
        listing: {
          active: true,
          online: outcome.online ?? true,
          ...(outcome.remoteAdId ? { remoteAdId: outcome.remoteAdId } : {}),
          ...(outcome.remoteAccountId !== undefined ? { remoteAccountId: outcome.remoteAccountId } : {}),
          ...(outcome.startDate ? { startDate: outcome.startDate } : {}),
          closeDate: outcome.closeDate ?? null,
        },
        job,
      };
    }
  }
}

/** Feature flags per event (only for feature jobs). */
export function featureChange(kind: JobAction, event: JobEvent, detail: EventDetail): FeatureChange | null {
  if (kind !== "feature") return null;
  switch (event) {
    case "started":
    case "retrying":
      return null;
    case "succeeded":
      return { pending: false, error: false, active: true, startDate: detail.now };
    case "failed":
      return { pending: false, error: true };
    case "cancelled":
    case "superseded":
      return { pending: false };
  }
}

/**
 * Features belong to a listing: an unpublish that succeeded ends the listing's features, and a placement
 * that succeeded is a new listing, which starts with none.
 */
const endsListingFeatures = (kind: JobAction, event: JobEvent) =>
  event === "succeeded" && (kind === "unpublish" || kind === "publish");

/** The job's own columns for an event; a success keeps the listing it made or acted on. */
function jobChange(job: JobRef, event: JobEvent, detail: EventDetail): SQLiteUpdateSetSource<typeof publishJobs> {
  const change = { status: JOB_TRANSITIONS[event].to, updatedAt: detail.now };
  switch (event) {
    case "started":
      return { ...change, attempts: sql`${publishJobs.attempts} + 1` };
    case "retrying":
      return {
        ...change,
        reason: detail.reason ?? null,
        retryAt: detail.retryAt ?? detail.now,
        // A wait starts once, and only the job's end ends it: the re-runs in between (waiting still, or
        // sending again and failing) move neither its start nor its account.
        ...(detail.waiting
          ? {
              waitingSince: sql`coalesce(${publishJobs.waitingSince}, ${detail.now})`,
              waitingAccount: sql`CASE WHEN ${publishJobs.waitingSince} IS NULL THEN ${detail.waiting.account} ELSE ${publishJobs.waitingAccount} END`,
            }
          : {}),
      };
    case "succeeded":
      return {
        ...change,
        ...notWaiting,
        reason: null,
        remoteAdId:
          detail.outcome?.remoteAdId ??
          sql`(SELECT ${adPublications.remoteAdId} FROM ${adPublications} WHERE ${adPublications.adId} = ${job.adId} AND ${adPublications.portal} = ${job.portal})`,
      };
    case "failed":
    case "cancelled":
    case "superseded":
      return { ...change, ...notWaiting, reason: detail.reason ?? null };
  }
}

/** A job that ended waits no more. */
const notWaiting = { waitingSince: null, waitingAccount: null };

/**
 * Jobs (table alias `other`) of the same listing or feature as the job given by its columns: the same
 * listing (placements, updates and unpublishes of an ad on a portal) or, for a feature, the same feature.
 */
export function sameListingOrFeature(other: string, job: Record<"adId" | "portal" | "action" | "feature", unknown>) {
  const column = (name: string) => sql.raw(`${other}.${name}`);
  return sql`${column("ad_id")} = ${job.adId} AND ${column("portal")} = ${job.portal} AND CASE WHEN ${job.action} = 'feature'
    THEN ${column("action")} = 'feature' AND ${column("feature")} = ${job.feature} ELSE ${column("action")} != 'feature' END`;
}

/**
 * The jobs of one listing run in the order they were queued: a job is claimed only when no older one
 * of its listing is still open. So an unpublish and the placement asked for after it reach the
 * marketplace in that order. Features wait for nothing, but an unpublish waits for every feature of its
 * listing that has started and not ended, whenever it was queued: a feature that started may already
 * be bought at the marketplace (its process died before the outcome was written), and taken down
 * first, its retry would find the listing gone and refund a purchase the marketplace holds. Sent again
 * while the listing is live, the purchase is answered once by its reference.
 */
const noEarlierOpenJob = (job: JobRef) =>
  job.action === "feature"
    ? undefined
    : and(
        sql`NOT EXISTS (SELECT 1 FROM queue_items AS earlier WHERE ${sameListingOrFeature("earlier", job)}
          AND earlier.id < ${job.id} AND earlier.status IN ('pending', 'processing'))`,
        job.action === "unpublish" ? noStartedFeatureOpen(job) : undefined,
      );

/** How long a placement or an update waits for its ad's open image jobs, at most (one whose message was lost). */
export const IMAGES_WAIT_MS = 15 * 60_000;

/**
 * A placement or an update sends the ad whole: it is claimed only when no image job of its ad is open
 * (each is stored or refused within its download's limits, and the last to end sends the jobs that
 * waited: `jobsAwaitingImages`), so a listing goes out once, with its images. An image job open for
 * longer than IMAGES_WAIT_MS holds nothing.
 */
export const noImageOpen = (adId: number, now: string) =>
  sql`NOT EXISTS (SELECT 1 FROM image_jobs WHERE image_jobs.ad_id = ${adId} AND image_jobs.done = 0
    AND image_jobs.created_at > ${new Date(Date.parse(now) - IMAGES_WAIT_MS).toISOString()})`;

const sendsTheAd = (job: JobRef) => job.action === "publish" || job.action === "update";

/** No feature of the job's listing has started and not ended. */
const noStartedFeatureOpen = (job: JobRef) =>
  sql`NOT EXISTS (SELECT 1 FROM queue_items AS started WHERE started.ad_id = ${job.adId}
    AND started.portal = ${job.portal} AND started.action = 'feature' AND started.attempts > 0
    AND started.status IN ('pending', 'processing'))`;

/** Each column of `change` set only where `current` holds (else kept as it is), in one SET. */
function whenCurrent(
  current: SQL | undefined,
  change: PublicationChange,
): SQLiteUpdateSetSource<typeof adPublications> {
  const columns = getTableColumns(adPublications);
  return Object.fromEntries(
    Object.entries(change).map(([key, value]) => {
      const column = columns[key as keyof typeof columns];
      return [key, sql`CASE WHEN ${current} THEN ${sql.param(value, column)} ELSE ${column} END`];
    }),
  );
}

/**
 * The statements of one event, for one D1 batch, by name: `job` moves the job (guarded by the states
 * it may move from, and for a claim by the order of its listing's jobs; it returns the row when it
 * moved); `effects` follow only a move made by this batch: the listing's facts, the job flags (only
 * while it is the publication's current job), a refund of its charge when it failed or was cancelled
 * (once per job, by the ledger's unique key), its event and the cache revision.
 */
export function transition(db: Db, job: JobRef, event: JobEvent, detail: EventDetail) {
  const { from, to } = JOB_TRANSITIONS[event];
  const moved = movedNow(job.id, to, detail.now);
  const publication = publicationChange(job.action, event, detail);
  const feature = featureChange(job.action, event, detail);
  const jobUpdate = db
    .update(publishJobs)
    .set(jobChange(job, event, detail))
    .where(
      and(
        eq(publishJobs.id, job.id),
        inArray(publishJobs.status, from),
        event === "started" ? noEarlierOpenJob(job) : undefined,
        event === "started" && sendsTheAd(job) ? noImageOpen(job.adId, detail.now) : undefined,
        event === "cancelled" ? eq(publishJobs.attempts, 0) : undefined,
      ),
    )
    .returning();
  const thisPublication = and(eq(adPublications.adId, job.adId), eq(adPublications.portal, job.portal));
  const effects: BatchItem<"sqlite">[] = [];
  if (publication) {
    // One statement writes both parts, so the row is written once: the job flags only while the job is
    // the publication's current one, the listing's facts either way.
    const currentJob = eq(adPublications.queueItemId, job.id);
    effects.push(
      db
        .update(adPublications)
        .set({ ...whenCurrent(currentJob, publication.job), ...publication.listing })
        .where(and(thisPublication, publication.listing ? undefined : currentJob, moved)),
    );
  }
  if (feature)
    effects.push(
      db
        .update(adFeatures)
        .set(feature)
        .where(
          and(
            eq(adFeatures.adId, job.adId),
            sql`${adFeatures.portal} = ${job.portal}`,
            eq(adFeatures.feature, job.feature ?? ""),
            moved,
          ),
        ),
    );
  if (endsListingFeatures(job.action, event))
    effects.push(
      db
        .update(adFeatures)
        .set({ active: false })
        .where(and(eq(adFeatures.adId, job.adId), sql`${adFeatures.portal} = ${job.portal}`, moved)),
    );
  if (to === "error" || to === "cancelled") effects.push(refundOf(db, job.id, detail.reason ?? event));
  const reported = eventOfTransition(db, job, event, detail);
  if (reported) effects.push(reported);
  effects.push(...waitEvents(db, job, event, detail));
  effects.push(bumpRevisions(db, [ADS_REVISION]));
  return { job: jobUpdate, effects };
}

/**
 * Gives back a job's charge, at most once (one refund per job, by the ledger's unique index), when the job
 * ended unpaid. The job holds what it was charged and whom, so the charge's entry is not looked up.
 */
const refundOf = (db: Db, itemId: number, reason: string) =>
  db
    .insert(walletEntries)
    .select(
      db
        .select({
          id: sql<number>`${nextId(walletEntries, groupOfUser(publishJobs.payerId))}`.as("id"),
          userId: sql<number>`${publishJobs.payerId}`.as("user_id"),
          amount: publishJobs.cost,
          kind: sql<"refund">`'refund'`.as("kind"),
          description: sql<string>`${`refund: ${reason}`}`.as("description"),
          adId: publishJobs.adId,
          portal: publishJobs.portal,
          queueItemId: publishJobs.id,
          broughtForward: sql<boolean>`0`.as("brought_forward"),
          createdAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("created_at"),
        })
        .from(publishJobs)
        .where(
          and(
            eq(publishJobs.id, itemId),
            sql`${publishJobs.cost} > 0`,
            inArray(publishJobs.status, ["error", "cancelled"]),
          ),
        ),
    )
    .onConflictDoNothing();

/** Runs one event on its own; answers the job as it is after the event, or null when it could not move. */
export async function applyEvent(
  db: Db,
  job: JobRef,
  event: JobEvent,
  detail: EventDetail,
  metrics?: Metrics,
): Promise<PublishJobRow | null> {
  const [moved] = await namedBatches(db, [transition(db, job, event, detail)]);
  const [row] = moved?.job ?? [];
  if (row && metrics) noteRefund(metrics, event, row);
  return row ?? null;
}

/** The wallet metric of an event that gave a charge back. */
export function noteRefund(metrics: Metrics, event: JobEvent, job: Pick<PublishJobRow, "cost" | "portal">): void {
  if ((event === "failed" || event === "cancelled" || event === "superseded") && job.cost > 0)
    metrics.record({ event: "wallet", entry: "refund", portal: job.portal, cents: job.cost });
}
