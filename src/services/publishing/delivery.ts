import { and, eq, gt, inArray, sql } from "drizzle-orm";
import { getDb } from "../../db/client";
import { adPublications, ads, queueItems } from "../../db/schema";
import type { Env } from "../../env";
import { backoffSeconds } from "../../lib/backoff";
import { log } from "../../lib/log";
import { mediaBaseOf } from "../../lib/media";
import { metricsOf } from "../../lib/metrics";
import { nowIso } from "../../lib/time";
import { type MarketplacePortal, PortalError } from "../../portals/gateway";
import { type ConnectionRow, connectionQuery, withAccessToken } from "./connections";
import { sendItems } from "./intents";
import { applyEvent, JOB_KINDS, type ListingOutcome, type QueueItem, transition } from "./lifecycle";
import { assembleListing, listingQueries } from "./listing";

const WEBSITE_LISTING_DAYS = 30;

/**
 * One publish, update, unpublish or feature item. At-least-once safe: the item is claimed (pending →
 * processing) before any work, so a duplicate or redelivered message finds it taken or finished and
 * does nothing; a placement carries a stable reference the marketplace knows it by, so even a claim
 * lost to a crash cannot make a second listing. A refusal ends the item in `error` with the reason; a
 * transient failure puts it back to pending and is thrown so the queue retries it with backoff.
 */
export async function runPublishItem(env: Env, itemId: number, requestId?: string): Promise<void> {
  const db = getDb(env.DB);
  const item = await db.select().from(queueItems).where(eq(queueItems.id, itemId)).get();
  if (item?.status !== "pending") return;

  const now = nowIso();
  const marketplace = item.portal === "website" ? null : (item.portal as MarketplacePortal);
  // Everything the job reads goes with its claim: the ad, its publication, newer changes of the same
  // listing, and for a marketplace the user's connection and the reads behind the listing.
  const sendsListing = item.action === "publish" || item.action === "update";
  const marketplaceReads = marketplace
    ? [
        connectionQuery(db, item.userId, marketplace),
        ...(sendsListing ? listingQueries(db, item.adId, item.userId, marketplace) : []),
      ]
    : [];
  const [claimed, ...rest] = await db.batch([
    ...transition(db, item, "started", { now }),
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
    ...marketplaceReads,
  ]);
  const running = claimed[0];
  if (!running) return; // another delivery claimed it first
  const startedAt = Date.now();
  const metrics = metricsOf(env);
  /** One log line and one metric per outcome of a job. */
  const report = (result: "done" | "error" | "retry" | "cancelled", reason?: string) => {
    const durationMs = Date.now() - startedAt;
    log(result === "done" ? "info" : "warn", "job", {
      kind: JOB_KINDS[item.action],
      portal: item.portal,
      itemId: item.id,
      adId: item.adId,
      attempts: running.attempts,
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
      attempts: running.attempts,
    });
  };
  const reads = rest.slice(rest.length - marketplaceReads.length - 3);
  const [ad] = reads[0] as (typeof ads.$inferSelect)[];
  const [publication] = reads[1] as (typeof adPublications.$inferSelect)[];
  const newer = reads[2] as { id: number }[];
  const [connection] = (reads[3] ?? []) as ConnectionRow[];
  const listingRows = reads.slice(4);
  if (!ad) return;
  if (item.action === "update" && newer.length > 0) {
    await applyEvent(db, running, "cancelled", { now: nowIso(), reason: "superseded" }, metrics);
    report("cancelled", "superseded");
    return;
  }

  let outcome: ListingOutcome;
  try {
    outcome =
      item.portal === "website"
        ? websiteOutcome(item.action, ad.id)
        : await marketplaceCall(env, running, ad, publication?.remoteAdId ?? 0, { connection, listingRows });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof PortalError && error.kind === "refused") {
      await applyEvent(db, running, "failed", { now: nowIso(), reason }, metrics);
      report("error", reason);
      return;
    }
    const retryAt = new Date(Date.now() + backoffSeconds(running.attempts) * 1000).toISOString();
    await applyEvent(db, running, "retrying", { now: nowIso(), reason, retryAt });
    report("retry", reason);
    throw error;
  }
  await finish(env, running, outcome, requestId);
  report("done");
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

/**
 * Success. An update asked for again while this one was being sent (`rerun`) goes out once more, with
 * the ad as it is now: the item is re-opened in the same batch and its message sent again.
 */
async function finish(env: Env, item: QueueItem, outcome: ListingOutcome, requestId?: string): Promise<void> {
  const db = getDb(env.DB);
  const now = nowIso();
  const succeeded = transition(db, item, "succeeded", { now, outcome });
  if (item.action !== "update") {
    await db.batch(succeeded);
    return;
  }
  const [, ...results] = await db.batch([
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
  ]);
  const reopened = results.at(-2) as { id: number }[];
  if (reopened.length > 0) await sendItems(env, [{ itemId: item.id, requestId }]);
}
