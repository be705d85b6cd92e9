import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { alias, type SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import type { Db } from "../../db/client";
import { adFeatures, adPublications, queueItems, walletEntries } from "../../db/schema";
import type { Metrics } from "../../lib/metrics";
import { ADS_REVISION } from "../ads/access";
import { type EventType, eventOf } from "../events/events";
import type { PublishItemRef } from "../shared/jobMessages";
import { bumpRevisions } from "../shared/revisions";

/**
 * The publication state machine, in one place: what each event of a queue item does to the item, to
 * the publication flags of `/status/` (placement, update, unpublish) or to the feature flags, to the
 * wallet, and which event it writes to the event log. The README's "Publishing state machine" table is
 * this file in prose.
 */

export type QueueItem = typeof queueItems.$inferSelect;
export type ItemKind = QueueItem["action"];
export type ItemState = QueueItem["status"];
/** `queued` is written by `queueIntents` (it needs the conditional insert); the others are transitions. */
export type ItemEvent = "started" | "retrying" | "succeeded" | "failed" | "cancelled";

/** What a marketplace (or the website) answered for a placement or update. */
export interface ListingOutcome {
  remoteAdId?: number;
  online?: boolean;
  startDate?: string | null;
  closeDate?: string | null;
}

export interface EventDetail {
  now: string;
  /** failed: the reason shown as errorReason; retrying: the transient error. */
  reason?: string;
  /** retrying: when the queue will deliver the item again. */
  retryAt?: string;
  outcome?: ListingOutcome;
}

export type ItemRef = PublishItemRef;

/** From which states each event may move an item, and to which. */
export const ITEM_TRANSITIONS: Record<ItemEvent, { from: ItemState[]; to: ItemState }> = {
  started: { from: ["pending"], to: "processing" },
  retrying: { from: ["processing"], to: "pending" },
  succeeded: { from: ["processing"], to: "done" },
  failed: { from: ["pending", "processing"], to: "error" },
  // Clients cancel pending items only; the consumer cancels an update it finds superseded after claiming it.
  cancelled: { from: ["pending", "processing"], to: "cancelled" },
};

type PublicationChange = Partial<typeof adPublications.$inferInsert>;
type FeatureChange = Partial<typeof adFeatures.$inferInsert>;

/** Publication flags per kind × event (features leave the publication alone). */
export function publicationChange(kind: ItemKind, event: ItemEvent, detail: EventDetail): PublicationChange | null {
  if (kind === "feature") return null;
  switch (event) {
    case "started":
      return { processing: true, processingDate: detail.now };
    case "retrying":
      return { processing: false };
    case "cancelled":
      return { pending: false, processing: false };
    case "failed":
      return {
        pending: false,
        processing: false,
        error: true,
        errorReason: detail.reason ?? null,
        ...(kind === "publish" ? { clientResult: false } : {}),
      };
    case "succeeded": {
      const settled = { pending: false, processing: false, error: false, errorReason: null, clientResult: true };
      if (kind === "unpublish") return { ...settled, active: false, online: false };
      const outcome = detail.outcome ?? {};
      // Only a placement makes a listing: an update keeps the listing's id and start.
      const placed =
        kind === "publish"
          ? {
              ...(outcome.remoteAdId ? { remoteAdId: outcome.remoteAdId } : {}),
              ...(outcome.startDate ? { startDate: outcome.startDate } : {}),
            }
          : {};
      return {
        ...settled,
        active: true,
        online: outcome.online ?? true,
        ...placed,
        ...(outcome.closeDate ? { closeDate: outcome.closeDate } : {}),
      };
    }
  }
}

/** Feature flags per event (only for feature items). */
export function featureChange(kind: ItemKind, event: ItemEvent, detail: EventDetail): FeatureChange | null {
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
      return { pending: false };
  }
}

/** The item's own columns for an event. */
function itemChange(event: ItemEvent, detail: EventDetail): SQLiteUpdateSetSource<typeof queueItems> {
  const change = { status: ITEM_TRANSITIONS[event].to, updatedAt: detail.now };
  switch (event) {
    case "started":
      return { ...change, attempts: sql`${queueItems.attempts} + 1` };
    case "retrying":
      return { ...change, reason: detail.reason ?? null, retryAt: detail.retryAt ?? detail.now };
    case "succeeded":
      return { ...change, reason: null };
    case "failed":
    case "cancelled":
      return { ...change, reason: detail.reason ?? null };
  }
}

/** Holds when the item is now in the event's target state (the flags follow only a transition that happened). */
const itemIsNow = (itemId: number, state: ItemState) =>
  sql`EXISTS (SELECT 1 FROM ${queueItems} WHERE ${queueItems.id} = ${itemId} AND ${queueItems.status} = ${state})`;

/**
 * The statements of one event, for one D1 batch: the item (guarded by the states it may move from;
 * it returns the row when it moved), its flags (only while it is the publication's current item),
 * a refund of its charge when it failed or was cancelled (once per item, by the ledger's unique key),
 * and the cache revision.
 */
export function transition(db: Db, item: ItemRef, event: ItemEvent, detail: EventDetail) {
  const { from, to } = ITEM_TRANSITIONS[event];
  const moved = itemIsNow(item.id, to);
  const publication = publicationChange(item.action, event, detail);
  const feature = featureChange(item.action, event, detail);
  const itemUpdate = db
    .update(queueItems)
    .set(itemChange(event, detail))
    .where(and(eq(queueItems.id, item.id), inArray(queueItems.status, from)))
    .returning();
  const follows: BatchItem<"sqlite">[] = [];
  if (publication)
    follows.push(
      db
        .update(adPublications)
        .set(publication)
        .where(
          and(
            eq(adPublications.adId, item.adId),
            eq(adPublications.portal, item.portal),
            eq(adPublications.queueItemId, item.id),
            moved,
          ),
        ),
    );
  if (feature)
    follows.push(
      db
        .update(adFeatures)
        .set(feature)
        .where(
          and(
            eq(adFeatures.adId, item.adId),
            sql`${adFeatures.portal} = ${item.portal}`,
            eq(adFeatures.feature, item.feature ?? ""),
            moved,
          ),
        ),
    );
  if (event === "failed" || event === "cancelled") follows.push(refundOf(db, item.id, detail.reason ?? event));
  const reported = eventOfTransition(db, item, event, detail);
  if (reported) follows.push(reported);
  follows.push(bumpRevisions(db, [ADS_REVISION]));
  return [itemUpdate, ...follows] as [typeof itemUpdate, ...BatchItem<"sqlite">[]];
}

/** The event each transition reports (the README's event catalogue); none for started and retrying. */
const EVENT_OF: Record<ItemEvent, Partial<Record<ItemKind, EventType>>> = {
  started: {},
  retrying: {},
  succeeded: {
    publish: "publish.active",
    update: "publish.updated",
    unpublish: "publish.offline",
    feature: "feature.active",
  },
  failed: { publish: "publish.error", update: "publish.error", unpublish: "publish.error", feature: "feature.error" },
  cancelled: { publish: "publish.cancelled", update: "publish.cancelled", unpublish: "publish.cancelled" },
};

/** The transition's event, written only when the item moved in this very batch (its state and clock). */
function eventOfTransition(db: Db, item: ItemRef, event: ItemEvent, detail: EventDetail) {
  const type = EVENT_OF[event][item.action];
  if (!type) return null;
  const publication = (column: "remote_ad_id" | "start_date" | "close_date") =>
    sql`(SELECT ${sql.raw(column)} FROM ad_publications WHERE ad_id = ${item.adId} AND portal = ${item.portal})`;
  const listing =
    item.action === "feature"
      ? sql`'feature', ${item.feature}`
      : sql`'kind', ${JOB_KINDS[item.action]}, 'remoteAdId', ${publication("remote_ad_id")}`;
  const dates =
    type === "publish.active"
      ? sql`, 'startDate', ${publication("start_date")}, 'closeDate', ${publication("close_date")}`
      : sql``;
  const reason = event === "succeeded" ? sql`` : sql`, 'reason', ${detail.reason ?? null}`;
  return eventOf(
    db,
    {
      type,
      userId: item.userId,
      adId: item.adId,
      portal: item.portal,
      data: sql`json_object('queueItemId', ${item.id}, ${listing}${dates}${reason})`,
    },
    sql`EXISTS (SELECT 1 FROM ${queueItems} WHERE ${queueItems.id} = ${item.id} AND ${queueItems.status} = ${ITEM_TRANSITIONS[event].to} AND ${queueItems.updatedAt} = ${detail.now})`,
  );
}

/** The API's name of each kind of item: a `publish` item places a new listing. */
export const JOB_KINDS = {
  publish: "placement",
  update: "update",
  unpublish: "unpublish",
  feature: "feature",
} as const;

/** Gives back an item's charge, at most once (the ledger is unique per item and kind), when the item ended unpaid. */
const refundOf = (db: Db, itemId: number, reason: string) => {
  const charge = alias(walletEntries, "charge");
  return db
    .insert(walletEntries)
    .select(
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          userId: charge.userId,
          amount: sql<number>`-${charge.amount}`.as("amount"),
          kind: sql<"refund">`'refund'`.as("kind"),
          description: sql<string>`${`refund: ${reason}`}`.as("description"),
          adId: charge.adId,
          portal: charge.portal,
          queueItemId: charge.queueItemId,
          createdAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("created_at"),
        })
        .from(charge)
        .where(
          and(
            eq(charge.queueItemId, itemId),
            eq(charge.kind, "charge"),
            sql`EXISTS (SELECT 1 FROM ${queueItems} WHERE ${queueItems.id} = ${itemId} AND ${queueItems.status} IN ('error', 'cancelled'))`,
          ),
        ),
    )
    .onConflictDoNothing();
};

/** Runs one event on its own; answers the item as it is after the event, or null when it could not move. */
export async function applyEvent(
  db: Db,
  item: ItemRef,
  event: ItemEvent,
  detail: EventDetail,
  metrics?: Metrics,
): Promise<QueueItem | null> {
  const [[moved]] = await db.batch(transition(db, item, event, detail));
  if (moved && metrics) noteRefund(metrics, event, moved);
  return moved ?? null;
}

/** The wallet metric of an event that gave a charge back. */
export function noteRefund(metrics: Metrics, event: ItemEvent, item: Pick<QueueItem, "cost" | "portal">): void {
  if ((event === "failed" || event === "cancelled") && item.cost > 0)
    metrics.record({ event: "wallet", entry: "refund", portal: item.portal, cents: item.cost });
}
