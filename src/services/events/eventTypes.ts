/** The event feed's vocabulary: its types, and the cursor that starts it from now. */

/** `GET /events/?after=latest`: start the feed from now. */
export const LATEST = "latest";

/** Every event type the log holds (the README's event catalogue). */
export const EVENT_TYPES = [
  "publish.pending",
  "publish.active",
  "publish.updated",
  "publish.offline",
  "publish.error",
  "publish.cancelled",
  "feature.active",
  "feature.error",
  "image.stored",
  "image.failed",
  "bid.received",
  "statistics.updated",
  "task.run",
  "wallet.below_limit",
  "connection.expired",
  "webhook.disabled",
  "job.waiting",
  "job.wait_ended",
  "job.unresolved",
  "sync.started",
  "sync.progress",
  "sync.finished",
  "feed.fetched",
  "feed.unchanged",
  "feed.failed",
  "feed.paused",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
