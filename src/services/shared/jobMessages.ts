import type { publishJobs } from "../../db/schema";

/** The columns of a publish job that never change: a message carries them so the consumer can claim the job without reading it first. */
export type PublishJobRef = Pick<
  typeof publishJobs.$inferSelect,
  "id" | "userId" | "adId" | "portal" | "action" | "feature"
>;

/**
 * Messages on the `jobs` queue. Each names a row in D1 that holds the job's state; the message is only a
 * pointer. `requestId` is the request (or cron run) that caused the work, so its log lines can be tied to
 * it. A `publish` message also carries its job's fixed columns (`job`); one queued before they were
 * added names only the id, and the consumer reads the job first. `ping` is the deep health check's probe of the queue binding; the consumer acknowledges it.
 * `webhook` is one delivery attempt of an event to an endpoint; it travels on the `webhooks` queue (or
 * `webhooks-slow`), and `image` on the `images` queue.
 */
export type JobMessage = (
  | ImageMessage
  | { kind: "publish"; itemId: number; item?: Omit<PublishJobRef, "id">; requestId?: string }
  | { kind: "ping"; requestId?: string }
  | SyncMessage
  | FeedMessage
  | WebhookMessage
) &
  MessageRouting;

/** Where a message's rows are. */
export type MessageRouting = {
  /** The shard the job's rows are on, stamped by the queue binding it was sent with (src/db/shards.ts); none: 1. */
  shard?: number;
  /**
   * The shard the message was sent on, when its group has moved since (src/db/moves/): the consumer
   * sends it to `shard`, and an event id it names is the old shard's (the event's `origin_id`).
   */
  movedFrom?: number;
};

/** One delivery attempt of an event (or of a test message) to a webhook endpoint. */
export type WebhookMessage = {
  kind: "webhook";
  endpointId: number;
  /** The event to deliver; absent for a test message. */
  eventId?: number;
  /** A test message's `webhook-id`, fixed when it is first sent so every attempt carries the same. */
  messageId?: string;
  /** Handed over by the dispatcher, so counted in the endpoint's bounded number of queued deliveries. */
  counted?: boolean;
  attempt: number;
  requestId?: string;
};

/** One image download (on the `images` queue); `clientId` is the client whose share of the lane it takes. */
export type ImageMessage = { kind: "image"; jobId: number; clientId?: number; requestId?: string };

/** One step of a stock sync (on the `jobs` queue): the sync's row says where it is. */
export type SyncMessage = { kind: "sync"; syncId: number; requestId?: string };

/** One fetch of a feed (on the `jobs` queue): the feed's row says where and how. */
export type FeedMessage = { kind: "feed"; feedId: number; requestId?: string };

export type PublishMessage = Extract<JobMessage, { kind: "publish" }>;
