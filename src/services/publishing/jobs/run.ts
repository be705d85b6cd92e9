import { and, eq, gt, inArray, sql } from "drizzle-orm";
import { type Db, namedBatches } from "../../../db/client";
import { inList } from "../../../db/inList";
import { adPublications, ads, publishJobs, users } from "../../../db/schema";
import type { ShardEnv } from "../../../env";
import { backoffSeconds } from "../../../lib/backoff";
import { log } from "../../../lib/log";
import { type Metrics, metricsOf } from "../../../lib/metrics";
import { nowIso } from "../../../lib/time";
import { JOB_KINDS, type Marketplace } from "../../../lib/vocabulary";
import { PortalError } from "../../../portals/gateway";
import type { JobContext } from "../../shared/context";
import type { PublishMessage } from "../../shared/jobMessages";
import { type ConnectionRow, connectionQuery } from "../connections";
import { isLive } from "../decide";
import { type ListingRows, listingQueries } from "../listing";
import { REFUSAL_TEXTS } from "../outcomes";
import { noteRefund, transition } from "./lifecycle";
import { sendJobs } from "./queue";
import { DELETED_BEFORE_START, type JobRef, type ListingOutcome, type PublishJobRow } from "./states";
import {
  accountAtStake,
  pastWaitBound,
  SETTLE_AGAIN_MS,
  type Unresolved,
  unresolvedAfterBound,
  unresolvedWait,
  WAITING_FOR_CONNECTION,
} from "./waits";
import { type AdRow, marketplaceCall, type Work, websiteOutcome } from "./work";

/** How a claimed job ends (or waits); written with the others of its batch. */
type Ending =
  | { event: "succeeded"; outcome: ListingOutcome }
  | { event: "failed" | "superseded"; reason: string; unresolved?: Unresolved }
  | { event: "retrying"; reason: string; error: unknown; waiting?: { account: number | null } };

/**
 * How a batch's jobs are run: `send` does each job's work at the marketplace. The others settle a job
 * that is given up, because its retries ran out (`give-up`, the dead-letter queue) or it made no
 * progress for a day (`expire`): they only ask the marketplace what it holds of the job's work and end
 * the job accordingly, succeeded when it holds it and failed (refunded) when it does not. A marketplace
 * that cannot be asked leaves the job pending, to be asked again: nothing is refunded while the
 * marketplace may hold it. A job that never started never reached it, and fails at once.
 */
export type JobMode = "send" | "give-up" | "expire";

/** Why a settled job that the marketplace does not hold failed. */
const SETTLED_FAILURE: Record<Exclude<JobMode, "send">, (job: PublishJobRow) => string> = {
  "give-up": (job) =>
    job.reason
      ? `the portal kept failing (${job.reason}); gave up after repeated attempts`
      : "the portal kept failing; gave up after repeated attempts",
  expire: () => "expired: no progress for 24 hours",
};

/**
 * The publish, update, unpublish and feature jobs of one message batch, in two D1 round trips
 * whatever their number: one batch claims every job (pending → processing) together with everything
 * its job reads (the ad, its publication, newer changes of the same listing, and for a marketplace the
 * user's connection and the listing's reads); then the marketplace calls run side by side; then one
 * batch writes every outcome. At-least-once safe: a duplicate or redelivered message finds its job
 * taken or finished and does nothing; a placement carries a stable reference the marketplace knows it
 * by, so even a claim lost to a crash cannot make a second listing. A refusal ends the job in `error`
 * with the reason; a transient failure puts it back to pending and its message is retried with backoff
 * (its entry in the response is rejected). Answers one settled result per job, in order.
 */
export async function runPublishJobs(
  ctx: JobContext,
  input: { messages: PublishMessage[]; mode?: JobMode },
): Promise<PromiseSettledResult<void>[]> {
  const { db, env } = ctx;
  const { messages, mode = "send" } = input;
  const refs = await jobRefs(db, messages);
  const now = nowIso();
  const known = refs.flatMap((job, at) => (job ? [{ job, at }] : []));
  const claimed = await namedBatches(
    db,
    known.map(({ job }) => claimOf(db, job, now)),
  );
  const metrics = metricsOf(env);
  const runs = known.flatMap(({ at }, i) => {
    const read = claimed[i];
    const running = read?.claim[0];
    if (!read || !running) return []; // gone, taken by another delivery, or waiting for an earlier job of its listing
    return [
      {
        at,
        job: running,
        message: messages[at] as PublishMessage,
        startedAt: Date.now(),
        ending: conclude(env, running, mode, {
          ad: read.ad[0],
          ownerDeleted: Boolean(read.owner[0]?.deletedAt),
          live: isLive(read.publication[0], now),
          active: read.publication[0]?.active ?? false,
          remoteAdId: read.publication[0]?.remoteAdId ?? 0,
          remoteAccountId: read.publication[0]?.remoteAccountId ?? null,
          superseded: read.newer.length > 0,
          connection: read.connection[0]?.[0],
          listingRows: read.listing,
        }),
      },
    ];
  });
  const ended = await Promise.all(runs.map(async (run) => ({ ...run, ending: await run.ending })));

  const written = await namedBatches(
    db,
    ended.map(({ job, ending }) => outcomeStatements(db, job, ending, nowIso(), mode)),
  );
  const toSend: { job: JobRef; requestId?: string }[] = [];
  const results: PromiseSettledResult<void>[] = messages.map(() => ({ status: "fulfilled", value: undefined }));
  ended.forEach(({ at, job, message, startedAt, ending }, i) => {
    const outcome = written[i];
    if (outcome?.outcome[0]) noteRefund(metrics, ending.event, job);
    // An update asked for again while it was being sent was re-opened with its outcome: it goes out once more.
    if (outcome?.rerun[0]) toSend.push({ job, requestId: message.requestId });
    // The next job of the listing waited for this one: it goes now.
    for (const next of outcome?.next ?? []) toSend.push({ job: next, requestId: next.requestId ?? undefined });
    report(metrics, job, message.requestId, Date.now() - startedAt, ending);
    // A job that waits, and settling that could not ask the marketplace, leave the job pending for the
    // cron, not on the queue.
    if (ending.event === "retrying" && mode === "send" && !ending.waiting)
      results[at] = { status: "rejected", reason: ending.error };
  });
  await sendJobs(env, toSend);
  return results;
}

/** Each message's job: the columns the message carries, or (for a message that names only the id) read in one query. */
async function jobRefs(db: Db, messages: PublishMessage[]): Promise<(JobRef | undefined)[]> {
  const unnamed = messages.filter((message) => !message.item).map((message) => message.itemId);
  const read = unnamed.length
    ? new Map((await db.select().from(publishJobs).where(inList(publishJobs.id, unnamed))).map((row) => [row.id, row]))
    : new Map<number, JobRef>();
  return messages.map((message) => (message.item ? { id: message.itemId, ...message.item } : read.get(message.itemId)));
}

/** Jobs of the same ad and portal queued after this one. */
const queuedAfter = (job: JobRef) =>
  and(eq(publishJobs.adId, job.adId), eq(publishJobs.portal, job.portal), gt(publishJobs.id, job.id));

/**
 * Every read one job needs, by name, and its claim (only a pending job whose listing has no
 * earlier open job moves; the claim answers the job when it did). Read and claimed in one transaction.
 */
function claimOf(db: Db, job: JobRef, now: string) {
  const marketplace = job.portal === "website" ? null : (job.portal as Marketplace);
  const sendsListing = job.action === "publish" || job.action === "update";
  const { job: claim, effects } = transition(db, job, "started", { now });
  return {
    ad: db.select().from(ads).where(eq(ads.id, job.adId)),
    owner: db.select({ deletedAt: users.deletedAt }).from(users).where(eq(users.id, job.userId)),
    publication: db
      .select()
      .from(adPublications)
      .where(and(eq(adPublications.adId, job.adId), eq(adPublications.portal, job.portal))),
    // A newer update or unpublish of the same listing makes an update pointless.
    newer: db
      .select({ id: publishJobs.id })
      .from(publishJobs)
      .where(
        and(
          queuedAfter(job),
          inArray(publishJobs.action, ["update", "unpublish"]),
          inArray(publishJobs.status, ["pending", "processing"]),
        ),
      ),
    connection: marketplace ? [connectionQuery(db, job.userId, marketplace)] : [],
    listing: marketplace && sendsListing ? listingQueries(db, job.adId, job.userId, marketplace) : undefined,
    claim,
    claimEffects: effects,
  };
}

/** Runs one claimed job up to how it ends; never throws. */
async function conclude(
  env: ShardEnv,
  job: PublishJobRow,
  mode: JobMode,
  read: {
    ad: AdRow | undefined;
    /** The ad's user was deleted (anonymised). */
    ownerDeleted: boolean;
    /** The listing is live now (`isLive`), the earlier jobs of its listing having ended. */
    live: boolean;
    /** The listing is active now, whether or not its close date passed. */
    active: boolean;
    remoteAdId: number;
    /** The marketplace account holding the listing (null: not known). */
    remoteAccountId: number | null;
    superseded: boolean;
    connection: ConnectionRow | undefined;
    listingRows: ListingRows | undefined;
  },
): Promise<Ending> {
  const { ad } = read;
  // This claim is the job's first: no earlier attempt reached the marketplace.
  const neverSent = job.attempts <= 1;
  if (mode !== "send" && neverSent) return { event: "failed", reason: SETTLED_FAILURE[mode](job) };
  // An ad or user deleted after its job was queued: an unpublish asked for before still runs; a job that
  // never reached the marketplace ends unpaid; one that may have reached it is settled by asking.
  const departed = !ad || read.ownerDeleted;
  if (departed && job.action !== "unpublish" && neverSent) return { event: "failed", reason: DELETED_BEFORE_START };
  const work: Work =
    mode !== "send"
      ? { settle: SETTLED_FAILURE[mode](job) }
      : departed && job.action !== "unpublish"
        ? { settle: "the advertisement or its user was deleted" }
        : "send";
  // A job that may already be at the marketplace is not refunded unasked while the user can still
  // connect: without a connection to ask through (a reconnect under way, an expired one), it waits, for
  // at most WAIT_BOUND_MS; past that, or with no user to connect, it is settled unresolved.
  if (job.portal !== "website" && !neverSent) {
    const unresolved = unresolvedWait(job, read.connection, departed);
    if (unresolved) return { event: "failed", reason: unresolved, unresolved: accountAtStake(job, read.connection) };
    if (!read.connection?.status)
      return {
        event: "retrying",
        reason: WAITING_FOR_CONNECTION,
        error: undefined,
        waiting: { account: read.connection?.externalUserId ?? null },
      };
  }
  if (work === "send") {
    if (job.action === "update" && read.superseded) return { event: "superseded", reason: "superseded" };
    // A placement was queued as such because the unpublish before it would take the listing down; when
    // that unpublish failed, the listing is still live and a second one must not be made (nor paid for).
    if (job.action === "publish" && read.live)
      return {
        event: "failed",
        reason: "the listing is still live: the unpublish before it did not run; publish again to update it",
      };
    // An update or a feature needs the listing live: an unpublish before it may have taken it down, and
    // past its close date the marketplace ended it. One that may already be at the marketplace (bought
    // before the listing ended) needs it active, and is settled by asking.
    if ((job.action === "update" || job.action === "feature") && !(neverSent ? read.live : read.active))
      return { event: "failed", reason: REFUSAL_TEXTS.ad_not_published };
  }
  // A listing is changed only through the account that holds it: another account's connection would
  // find nothing, and an unpublish would pass for done while the listing stays online.
  const holder = read.remoteAccountId;
  const connected = read.connection?.externalUserId ?? null;
  if (
    job.action !== "publish" &&
    job.portal !== "website" &&
    holder !== null &&
    connected !== null &&
    holder !== connected
  )
    return {
      event: "failed",
      reason: `the listing is at ${job.portal} account ${holder}; connect that account to change it`,
    };
  try {
    const outcome =
      job.portal === "website"
        ? websiteOutcome(job, work)
        : {
            ...(await marketplaceCall(env, job, work, { ...read, ad })),
            remoteAccountId: read.connection?.externalUserId ?? null,
          };
    return { event: "succeeded", outcome };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof PortalError && error.kind === "refused") return { event: "failed", reason };
    // Settling asked the marketplace and got no answer: that starts a wait (or goes on with it), and a
    // wait past its bound ends unresolved. Sending again is no asking: its failures only retry.
    if (mode !== "send" && !neverSent) {
      if (pastWaitBound(job))
        return {
          event: "failed",
          reason: unresolvedAfterBound(job, reason),
          unresolved: accountAtStake(job, read.connection),
        };
      return { event: "retrying", reason, error, waiting: { account: read.connection?.externalUserId ?? null } };
    }
    return { event: "retrying", reason, error };
  }
}

/**
 * The writes of a job's ending, by name: the transition (`outcome` answers the job when it moved); an
 * update asked for again while it was being sent (`rerun`) re-opened in the same batch, so it goes out
 * once more with the ad as it is now; and `next`, the oldest job of the listing still pending, which
 * waited for this one to end (after a feature, an unpublish of its listing that waited for it).
 */
function outcomeStatements(db: Db, job: PublishJobRow, ending: Ending, now: string, mode: JobMode) {
  const delayMs =
    mode !== "send" || (ending.event === "retrying" && ending.waiting)
      ? SETTLE_AGAIN_MS
      : backoffSeconds(job.attempts) * 1000;
  const waitingSince = job.waitingSince;
  const { job: outcome, effects } =
    ending.event === "retrying"
      ? transition(db, job, "retrying", {
          now,
          waitingSince,
          reason: ending.reason,
          retryAt: new Date(Date.now() + delayMs).toISOString(),
          ...(ending.waiting ? { waiting: ending.waiting } : {}),
        })
      : ending.event === "succeeded"
        ? transition(db, job, "succeeded", { now, waitingSince, outcome: ending.outcome })
        : transition(db, job, ending.event, {
            now,
            waitingSince,
            reason: ending.reason,
            ...(ending.event === "failed" && ending.unresolved ? { unresolved: ending.unresolved } : {}),
          });
  const reruns = job.action === "update" && ending.event === "succeeded";
  return {
    outcome,
    effects,
    rerun: db
      .update(publishJobs)
      .set({ status: "pending", rerun: false, retryAt: now })
      .where(
        and(
          eq(publishJobs.id, job.id),
          eq(publishJobs.status, "done"),
          eq(publishJobs.rerun, true),
          sql`${reruns ? 1 : 0} = 1`,
        ),
      )
      .returning({ id: publishJobs.id }),
    rerunFlags: db
      .update(adPublications)
      .set({ pending: true, pendingDate: now })
      .where(
        and(
          eq(adPublications.adId, job.adId),
          eq(adPublications.portal, job.portal),
          eq(adPublications.queueItemId, job.id),
          sql`EXISTS (SELECT 1 FROM ${publishJobs} WHERE ${publishJobs.id} = ${job.id} AND ${publishJobs.status} = 'pending' AND ${publishJobs.rerun} = 0 AND ${publishJobs.retryAt} = ${now})`,
          sql`${reruns ? 1 : 0} = 1`,
        ),
      ),
    next: db
      .select()
      .from(publishJobs)
      .where(
        and(
          job.action === "feature"
            ? and(
                eq(publishJobs.adId, job.adId),
                eq(publishJobs.portal, job.portal),
                eq(publishJobs.action, "unpublish"),
              )
            : and(queuedAfter(job), sql`${publishJobs.action} != 'feature'`),
          eq(publishJobs.status, "pending"),
          sql`${ending.event !== "retrying" ? 1 : 0} = 1`,
        ),
      )
      .orderBy(publishJobs.id)
      .limit(1),
  };
}

const RESULT_OF = { succeeded: "done", failed: "error", retrying: "retry", superseded: "cancelled" } as const;

/** One log line and one metric per outcome of a job. */
function report(
  metrics: Metrics,
  job: PublishJobRow,
  requestId: string | undefined,
  durationMs: number,
  ending: Ending,
) {
  const result = RESULT_OF[ending.event];
  const reason = ending.event === "succeeded" ? undefined : ending.reason;
  log(result === "done" ? "info" : "warn", "job", {
    kind: JOB_KINDS[job.action],
    portal: job.portal,
    itemId: job.id,
    adId: job.adId,
    attempts: job.attempts,
    durationMs,
    result,
    reason,
    requestId,
  });
  metrics.record({
    event: "job",
    kind: JOB_KINDS[job.action],
    portal: job.portal,
    result,
    durationMs,
    attempts: job.attempts,
  });
}
