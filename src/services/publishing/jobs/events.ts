// The events a job's transitions write: what each reports, and the events of a wait and its end.
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../../../db/client";
import { JOB_KINDS, type JobAction } from "../../../lib/vocabulary";
import { eventOf } from "../../events/events";
import type { EventType } from "../../events/eventTypes";
import { type EventDetail, JOB_TRANSITIONS, type JobEvent, type JobRef, movedNow } from "./states";

/** The event each transition reports (the README's event catalogue); none for started and retrying. */
const EVENT_OF: Record<JobEvent, Partial<Record<JobAction, EventType>>> = {
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
  superseded: { update: "publish.cancelled" },
};

/** The transition's event, written only when the job moved in this very batch (its state and clock). */
export function eventOfTransition(db: Db, job: JobRef, event: JobEvent, detail: EventDetail) {
  const type = EVENT_OF[event][job.action];
  if (!type) return null;
  const publication = (column: "remote_ad_id" | "start_date" | "close_date") =>
    sql`(SELECT ${sql.raw(column)} FROM ad_publications WHERE ad_id = ${job.adId} AND portal = ${job.portal})`;
  const listing =
    job.action === "feature"
      ? sql`'feature', ${job.feature}`
      : sql`'kind', ${JOB_KINDS[job.action]}, 'remoteAdId', ${publication("remote_ad_id")}`;
  const dates =
    type === "publish.active"
      ? sql`, 'startDate', ${publication("start_date")}, 'closeDate', ${publication("close_date")}`
      : sql``;
  const reason = event === "succeeded" ? sql`` : sql`, 'reason', ${detail.reason ?? null}`;
  return eventOf(
    db,
    {
      type,
      userId: job.userId,
      adId: job.adId,
      portal: job.portal,
      data: sql`json_object('queueItemId', ${job.id}, ${listing}${dates}${reason})`,
    },
    movedNow(job.id, JOB_TRANSITIONS[event].to, detail.now),
  );
}

/**
 * The events of a job's wait for an answer from its marketplace: `job.waiting` when it starts,
 * `job.wait_ended` when the job ends (with its outcome), and `job.unresolved` when the job was settled
 * without an answer (refunded), the record an operator reconciles with the marketplace.
 */
export function waitEvents(db: Db, job: JobRef, event: JobEvent, detail: EventDetail) {
  if (event === "started") return [];
  const moved = movedNow(job.id, JOB_TRANSITIONS[event].to, detail.now);
  const write = (type: EventType, data: SQL) =>
    eventOf(db, { type, userId: job.userId, adId: job.adId, portal: job.portal, data }, moved);
  const wasWaiting = detail.waitingSince !== undefined && detail.waitingSince !== null;
  const column = (name: "external_ref" | "cost") =>
    sql`(SELECT ${sql.raw(name)} FROM queue_items WHERE id = ${job.id})`;
  return [
    ...(detail.waiting && !wasWaiting
      ? [write("job.waiting", sql`json_object('queueItemId', ${job.id}, 'reason', ${detail.reason ?? ""})`)]
      : []),
    ...(event !== "retrying" && wasWaiting
      ? [write("job.wait_ended", sql`json_object('queueItemId', ${job.id}, 'outcome', ${event})`)]
      : []),
    ...(detail.unresolved
      ? [
          write(
            "job.unresolved",
            sql`json_object('queueItemId', ${job.id}, 'kind', ${JOB_KINDS[job.action]}, 'externalRef', ${column("external_ref")}, 'account', ${detail.unresolved.account}, 'cost', ${column("cost")}, 'reason', ${detail.reason ?? ""})`,
          ),
        ]
      : []),
  ];
}
