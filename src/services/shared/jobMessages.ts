import type { WebhookMessage } from "../events/webhooks";

/**
 * Messages on the `jobs` queue. Each names a row in D1 that holds the job's state; the message is only a
 * pointer. `requestId` is the request (or cron run) that caused the work, so its log lines can be tied to
 * it. `ping` is the deep health check's probe of the queue binding; the consumer acknowledges it.
 * `webhook` is one delivery attempt of an event to an endpoint.
 */
export type Job =
  | { kind: "image"; jobId: number; requestId?: string }
  | { kind: "publish"; itemId: number; requestId?: string }
  | { kind: "ping"; requestId?: string }
  | WebhookMessage;
