import { and, eq, gt, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { batchGroups, type Db, getDb } from "../../db/client";
import { inList } from "../../db/inList";
import { adPublications, ads, queueItems } from "../../db/schema";
import type { Env } from "../../env";
import { backoffSeconds } from "../../lib/backoff";
import { log } from "../../lib/log";
import { mediaBaseOf } from "../../lib/media";
import { type Metrics, metricsOf } from "../../lib/metrics";
import { nowIso } from "../../lib/time";
import { type MarketplacePortal, PortalError } from "../../portals/gateway";
import type { PublishJob } from "../shared/jobMessages";
import { type ConnectionRow, connectionQuery, withAccessToken } from "./connections";
import { sendItems } from "./intents";
import { type ItemRef, JOB_KINDS, type ListingOutcome, noteRefund, type QueueItem, transition } from "./lifecycle";
import { assembleListing, listingQueries } from "./listing";

const WEBSITE_LISTING_DAYS = 30;

type AdRow = typeof ads.$inferSelect;

/** What a claimed item's job comes to; written with the others of its batch. */
type Decision =
  | { event: "succeeded"; outcome: ListingOutcome }
  | { event: "failed" | "cancelled"; reason: string }
  | { event: "retrying"; reason: string; error: unknown };

/**
 * The publish, update, unpublish and feature items of one message batch, in two D1 round trips
 * whatever their number: one batch claims every item (pending → processing) together with everything
 * its job reads (the ad, its publication, newer changes of the same listing, and for a marketplace the
 * user's connection and the listing's reads); then the marketplace calls run side by side; then one
 * batch writes every outcome. At-least-once safe: a duplicate or redelivered message finds its item
 * taken or finished and does nothing; a placement carries a stable reference the marketplace knows it
 * by, so even a claim lost to a crash cannot make a second listing. A refusal ends the item in `error`
 * with the reason; a transient failure puts it back to pending and its message is retried with backoff
 * (its entry in the answer is rejected). Answers one settled result per job, in order.
 */
export async function runPublishJobs(env: Env, jobs: PublishJob[]): Promise<PromiseSettledResult<void>[]> {
  const db = getDb(env.DB);
  const refs = await itemRefs(db, jobs);
  const now = nowIso();
  const claims = refs.map((item) => (item ? claimOf(db, item, now) : { reads: [], claim: [] }));
  const claimed = await batchGroups(
    db,
    claims.map(({ reads, claim }) => [...reads, ...claim]),
  );
  const metrics = metricsOf(env);
  const runs = refs.flatMap((item, at) => {
    const results = claimed[at] ?? [];
    const readCount = claims[at]?.reads.length ?? 0;
    const [ad, publication, newer, connection, ...listingRows] = results.slice(0, readCount);
    const running = (results[readCount] as QueueItem[] | undefined)?.[0];
    if (!item || !running) return []; // gone, or another delivery claimed it first
    return [
      {
        at,
        item: running,
        job: jobs[at] as PublishJob,
        startedAt: Date.now(),
        decision: decide(env, running, {
          ad: (ad as AdRow[])[0],
          remoteAdId: (publication as (typeof adPublications.$inferSelect)[])[0]?.remoteAdId ?? 0,
          superseded: (newer as unknown[]).length > 0,
          connection: (connection as ConnectionRow[] | undefined)?.[0],
          listingRows,
        }),
      },
    ];
  });
  const decided = await Promise.all(runs.map(async (run) => ({ ...run, decision: await run.decision })));

  const written = await batchGroups(
    db,
    decided.map(({ item, decision }) => outcomeStatements(db, item, decision, nowIso())),
  );
  const reruns: { item: QueueItem; requestId?: string }[] = [];
  const results: PromiseSettledResult<void>[] = jobs.map(() => ({ status: "fulfilled", value: undefined }));
  decided.forEach(({ at, item, job, startedAt, decision }, i) => {
    const [moved, ...rest] = written[i] ?? [];
    if ((moved as QueueItem[])[0]) noteRefund(metrics, decision.event, item);
    // An update asked for again while it was being sent was re-opened with its outcome: it goes out once more.
    if (item.action === "update" && decision.event === "succeeded" && (rest.at(-2) as unknown[]).length > 0)
      reruns.push({ item, requestId: job.requestId });
    report(metrics, item, job.requestId, Date.now() - startedAt, decision);
    if (decision.event === "retrying") results[at] = { status: "rejected", reason: decision.error };
  });
  await sendItems(env, reruns);
  return results;
}

/** Each job's item: the columns its message carries, or (for a message that names only the id) read in one query. */
async function itemRefs(db: Db, jobs: PublishJob[]): Promise<(ItemRef | undefined)[]> {
  const unnamed = jobs.filter((job) => !job.item).map((job) => job.itemId);
  const read = unnamed.length
    ? new Map((await db.select().from(queueItems).where(inList(queueItems.id, unnamed))).map((row) => [row.id, row]))
    : new Map<number, ItemRef>();
  return jobs.map((job) => (job.item ? { id: job.itemId, ...job.item } : read.get(job.itemId)));
}

/**
 * Every read one item's job needs, and its claim (only a pending item moves; the claim's first
 * statement answers the item when it did). Read and claimed in one transaction, so the order is free.
 */
function claimOf(db: Db, item: ItemRef, now: string) {
  const marketplace = item.portal === "website" ? null : (item.portal as MarketplacePortal);
  const sendsListing = item.action === "publish" || item.action === "update";
  const reads: BatchItem<"sqlite">[] = [
    db.select().from(ads).where(eq(ads.id, item.adId)),
    db
      .select()
      .from(adPublications)
      .where(and(eq(adPublications.adId, item.adId), eq(adPublications.portal, item.portal))),
    // A newer update or unpublish of the same listing makes an update pointless.
    db
      .select({ id: queueItems.id })
      .from(queueItems)
      .where(
        and(
          eq(queueItems.adId, item.adId),
          eq(queueItems.portal, item.portal),
          gt(queueItems.id, item.id),
          inArray(queueItems.action, ["update", "unpublish"]),
          inArray(queueItems.status, ["pending", "processing"]),
        ),
      ),
    ...(marketplace
      ? [
          connectionQuery(db, item.userId, marketplace),
          ...(sendsListing ? listingQueries(db, item.adId, item.userId, marketplace) : []),
        ]
      : []),
  ];
  return { reads, claim: transition(db, item, "started", { now }) };
}

/** The job of one claimed item, up to its outcome; never throws. */
async function decide(
  env: Env,
  item: QueueItem,
  read: {
    ad: AdRow | undefined;
    remoteAdId: number;
    superseded: boolean;
    connection: ConnectionRow | undefined;
    listingRows: unknown[];
  },
): Promise<Decision> {
  const { ad } = read;
  if (!ad) return { event: "failed", reason: "the advertisement no longer exists" };
  if (item.action === "update" && read.superseded) return { event: "cancelled", reason: "superseded" };
  try {
    const outcome =
      item.portal === "website"
        ? websiteOutcome(item.action, ad.id)
        : await marketplaceCall(env, item, ad, read.remoteAdId, read);
    return { event: "succeeded", outcome };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof PortalError && error.kind === "refused") return { event: "failed", reason };
    return { event: "retrying", reason, error };
  }
}

/**
 * The writes of a decision. A success of an update asked for again while it was being sent (`rerun`)
 * re-opens the item in the same batch (the caller sends its message again, with the ad as it is now).
 */
function outcomeStatements(db: Db, item: QueueItem, decision: Decision, now: string): BatchItem<"sqlite">[] {
  switch (decision.event) {
    case "succeeded": {
      const succeeded = transition(db, item, "succeeded", { now, outcome: decision.outcome });
      if (item.action !== "update") return succeeded;
      return [
        ...succeeded,
        db
          .update(queueItems)
          .set({ status: "pending", rerun: false, retryAt: now })
          .where(and(eq(queueItems.id, item.id), eq(queueItems.status, "done"), eq(queueItems.rerun, true)))
          .returning({ id: queueItems.id }),
        db
          .update(adPublications)
          .set({ pending: true, pendingDate: now })
          .where(
            and(
              eq(adPublications.adId, item.adId),
              eq(adPublications.portal, item.portal),
              eq(adPublications.queueItemId, item.id),
              sql`EXISTS (SELECT 1 FROM ${queueItems} WHERE ${queueItems.id} = ${item.id} AND ${queueItems.status} = 'pending')`,
            ),
          ),
      ];
    }
    case "retrying": {
      const retryAt = new Date(Date.now() + backoffSeconds(item.attempts) * 1000).toISOString();
      return transition(db, item, "retrying", { now, reason: decision.reason, retryAt });
    }
    case "failed":
    case "cancelled":
      return transition(db, item, decision.event, { now, reason: decision.reason });
  }
}

const RESULT_OF = { succeeded: "done", failed: "error", retrying: "retry", cancelled: "cancelled" } as const;

/** One log line and one metric per outcome of a job. */
function report(
  metrics: Metrics,
  item: QueueItem,
  requestId: string | undefined,
  durationMs: number,
  decision: Decision,
) {
  const result = RESULT_OF[decision.event];
  const reason = decision.event === "succeeded" ? undefined : decision.reason;
  log(result === "done" ? "info" : "warn", "job", {
    kind: JOB_KINDS[item.action],
    portal: item.portal,
    itemId: item.id,
    adId: item.adId,
    attempts: item.attempts,
    durationMs,
    result,
    reason,
    requestId,
  });
  metrics.record({
    event: "job",
    kind: JOB_KINDS[item.action],
    portal: item.portal,
    result,
    durationMs,
    attempts: item.attempts,
  });
}

function websiteOutcome(action: string, adId: number): ListingOutcome {
  if (action === "unpublish") return { online: false };
  const start = new Date();
  return {
    remoteAdId: adId,
    online: true,
    startDate: start.toISOString(),
    closeDate: new Date(start.getTime() + WEBSITE_LISTING_DAYS * 86_400_000).toISOString(),
  };
}

async function marketplaceCall(
  env: Env,
  item: QueueItem,
  ad: typeof ads.$inferSelect,
  remoteAdId: number,
  read: { connection: ConnectionRow | undefined; listingRows: unknown[] },
): Promise<ListingOutcome> {
  const db = getDb(env.DB);
  const portal = item.portal as MarketplacePortal;
  const externalRef = item.externalRef ?? `ad-${ad.id}-${item.id}`;
  const listing = () =>
    assembleListing(read.listingRows, { ad, externalRef, withImages: item.images, mediaBase: mediaBaseOf(env) });
  return withAccessToken(db, env, { userId: item.userId, portal, current: read.connection }, async (gateway, token) => {
    switch (item.action) {
      case "publish": {
        // A placement is always a new listing; an earlier attempt of this one may have made it already.
        if (item.attempts > 1 || item.retryOf) {
          const existing = await gateway.findListing(token, externalRef);
          if (existing?.online) return existing;
        }
        return gateway.createListing(token, await listing());
      }
      case "update":
        if (!remoteAdId) throw new PortalError("refused", "this advertisement is not published");
        return gateway.updateListing(token, remoteAdId, await listing());
      case "unpublish":
        if (remoteAdId) await gateway.deleteListing(token, remoteAdId);
        return { online: false };
      case "feature":
        if (!remoteAdId) throw new PortalError("refused", "this advertisement is not published");
        // The item's reference makes a repeated purchase of this feature a no-op at the marketplace.
        await gateway.buyFeature(token, remoteAdId, item.feature ?? "", externalRef);
        return {};
    }
  });
}
