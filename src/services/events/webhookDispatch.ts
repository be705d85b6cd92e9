import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { settledClient } from "../../db/directory";
import { inList } from "../../db/inList";
import { events, webhookEndpoints } from "../../db/schema";
import type { Env } from "../../env";
import { nowIso } from "../../lib/time";
import type { JobContext } from "../shared/context";
import type { WebhookMessage } from "../shared/jobMessages";

/**
 * Webhook delivery, bounded per endpoint so that no endpoint (and no client) can slow another: messages
 * travel on queues of their own; an endpoint has at most `DELIVERY_LIMITS.inQueue` deliveries queued
 * (the dispatcher hands over the rest as those end, so nothing is dropped) and at most
 * `DELIVERY_LIMITS.concurrent` in flight (a lease per delivery); after `DELIVERY_LIMITS.breakerFailures`
 * failures in a row its breaker pauses it, and its deliveries wait in the queue until the pause ends.
 * Slowness costs the endpoint too, not only failure: a delivery on the fast lane has
 * `DELIVERY_LIMITS.fastLaneMs` to be answered; an endpoint that takes longer moves to the slow lane (a
 * queue of its own, with the full `timeoutMs`) for `SLOW_LANE_HOLD_MS`, or until it answers fast again.
 */
export const DELIVERY_LIMITS = {
  inQueue: 100,
  concurrent: 4,
  breakerFailures: 5,
  timeoutMs: 10_000,
  fastLaneMs: 2_000,
} as const;

/** The queue a delivery travels on: `fast` (the `webhooks` queue) or `slow` (`webhooks-slow`). */
export type DeliveryLane = "fast" | "slow";

export type EndpointRow = typeof webhookEndpoints.$inferSelect;

export const laneOf = (endpoint: Pick<EndpointRow, "slowUntil">, now: string): DeliveryLane =>
  endpoint.slowUntil !== null && endpoint.slowUntil > now ? "slow" : "fast";
export const queueOf = (env: Env, lane: DeliveryLane) => (lane === "slow" ? env.WEBHOOKS_SLOW : env.WEBHOOKS);

/** Sends a delivery message on the lane its endpoint is on now. */
export const sendDelivery = (env: Env, endpoint: Pick<EndpointRow, "slowUntil">, message: WebhookMessage) =>
  queueOf(env, laneOf(endpoint, nowIso())).send(message);

/**
 * Which endpoints a dispatch looks at: some (a replay's; those whose deliveries just ended, to refill
 * their queue), one client's (after its write), or all (the cron, after job batches).
 */
export interface DispatchScope {
  endpointIds?: number[];
  clientId?: number;
  requestId?: string;
}

/**
 * Hands new events to delivery: per enabled endpoint with room in its queue and events of its client
 * after its cursor (found in one query, by the `events_client` index), the events it subscribes to, up
 * to its room. The cursor and the queued count move together by compare-and-set before the messages go
 * out, so two dispatchers racing never hand one event over twice; when the queue refuses, both go back.
 * From the queue on, delivery is at least once. Runs after writes that wrote events (for the writer's
 * client), after job batches, on a replay (its endpoint) and every minute from the cron.
 */
export async function dispatchEvents(ctx: Pick<JobContext, "db" | "env">, scope: DispatchScope): Promise<number> {
  const { db, env } = ctx;
  const endpoints = await db
    .select()
    .from(webhookEndpoints)
    .where(
      and(
        eq(webhookEndpoints.enabled, true),
        lt(webhookEndpoints.inQueue, DELIVERY_LIMITS.inQueue),
        scope.endpointIds ? inList(webhookEndpoints.id, scope.endpointIds) : undefined,
        scope.clientId !== undefined ? eq(webhookEndpoints.clientId, scope.clientId) : undefined,
        settledClient(webhookEndpoints.clientId),
        sql`EXISTS (SELECT 1 FROM ${events} WHERE ${events.clientId} = ${webhookEndpoints.clientId} AND ${events.id} > ${webhookEndpoints.lastEventId})`,
      ),
    );
  let queued = 0;
  for (const endpoint of endpoints) queued += await dispatchTo(db, env, endpoint, scope.requestId);
  return queued;
}

async function dispatchTo(db: Db, env: Env, endpoint: EndpointRow, requestId?: string): Promise<number> {
  let { lastEventId: cursor, inQueue } = endpoint;
  let queued = 0;
  while (inQueue < DELIVERY_LIMITS.inQueue) {
    const page = await db
      .select({ id: events.id, type: events.type })
      .from(events)
      .where(and(eq(events.clientId, endpoint.clientId), gt(events.id, cursor)))
      .orderBy(events.id)
      .limit(100);
    if (page.length === 0) break;
    // Up to the endpoint's room: the cursor stops at the last event taken (unsubscribed ones pass).
    const room = DELIVERY_LIMITS.inQueue - inQueue;
    const handed: typeof page = [];
    let last = cursor;
    let full = false;
    for (const event of page) {
      if (!endpoint.types || endpoint.types.includes(event.type)) {
        if (handed.length === room) {
          full = true;
          break;
        }
        handed.push(event);
      }
      last = event.id;
    }
    const move = (from: number, to: number, count: number) =>
      db
        .update(webhookEndpoints)
        .set({ lastEventId: to, inQueue: sql`max(0, ${webhookEndpoints.inQueue} + ${count})` })
        .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.lastEventId, from)))
        .returning({ id: webhookEndpoints.id });
    // Cursor and count first (compare-and-set): of two dispatchers racing, one sends.
    if ((await move(cursor, last, handed.length)).length === 0) break;
    try {
      if (handed.length > 0)
        await queueOf(env, laneOf(endpoint, nowIso())).sendBatch(
          handed.map((e) => ({
            body: {
              kind: "webhook",
              endpointId: endpoint.id,
              eventId: e.id,
              counted: true,
              attempt: 1,
              requestId,
            } satisfies WebhookMessage,
          })),
        );
    } catch (error) {
      // The queue refused: cursor and count go back, and the next run hands these events over again.
      await move(last, cursor, -handed.length);
      throw error;
    }
    queued += handed.length;
    inQueue += handed.length;
    cursor = last;
    if (full || page.length < 100) break;
  }
  return queued;
}
