import { and, eq, gt, lt, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { inList } from "../../db/inList";
import { events, webhookDeliveries, webhookEndpoints, webhookLeases } from "../../db/schema";
import type { Env } from "../../env";
import { randomToken, standardWebhookSignature } from "../../lib/crypto";
import { log } from "../../lib/log";
import { metricsOf } from "../../lib/metrics";
import { guardedFetch, outboundPolicy } from "../../lib/outbound";
import { open } from "../../lib/secretBox";
import { runInShares } from "../../lib/shares";
import { formatDateTime, nowIso } from "../../lib/time";
import type { JobContext } from "../shared/context";
import type { WebhookMessage } from "../shared/jobMessages";
import { bumpRevisions, webhookRevision } from "../shared/revisions";
import { eventView } from "./events";

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
const LANE_TIMEOUT_MS: Record<DeliveryLane, number> = {
  fast: DELIVERY_LIMITS.fastLaneMs,
  slow: DELIVERY_LIMITS.timeoutMs,
};
/** How long an endpoint that was too slow for the fast lane stays on the slow one (unless it answers fast). */
const SLOW_LANE_HOLD_MS = 3_600_000;
/** An endpoint whose every delivery failed for this long is disabled. */
export const FAILING_LIMIT_MS = 3 * 86_400_000;
/** Seconds before attempt 2, 3, …: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 28 hours in all). */
export const DEFAULT_RETRY_DELAYS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
const DEFAULT_PAUSE_SECONDS = 300;
/** A lease outlives its delivery's timeout: one left by a consumer that died runs out by itself. */
const LEASE_MS = DELIVERY_LIMITS.timeoutMs + 20_000;
/** Seconds a delivery waits when its endpoint already has its deliveries in flight. */
const BUSY_WAIT_SECONDS = 2;

type EndpointRow = typeof webhookEndpoints.$inferSelect;

const laneOf = (endpoint: Pick<EndpointRow, "slowUntil">, now: string): DeliveryLane =>
  endpoint.slowUntil !== null && endpoint.slowUntil > now ? "slow" : "fast";
const queueOf = (env: Env, lane: DeliveryLane) => (lane === "slow" ? env.WEBHOOKS_SLOW : env.WEBHOOKS);

/** Sends a delivery message on the lane its endpoint is on now. */
export const sendDelivery = (env: Env, endpoint: Pick<EndpointRow, "slowUntil">, message: WebhookMessage) =>
  queueOf(env, laneOf(endpoint, nowIso())).send(message);

const retryDelays = (env: Env) =>
  env.WEBHOOK_RETRY_DELAYS ? env.WEBHOOK_RETRY_DELAYS.split(",").map(Number) : DEFAULT_RETRY_DELAYS;
const pauseSeconds = (env: Env) => Number(env.WEBHOOK_PAUSE_SECONDS) || DEFAULT_PAUSE_SECONDS;

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

/** The Standard Webhooks signature header: every valid secret signs (two during a rotation's overlap). */
async function signatures(env: Env, endpoint: EndpointRow, messageId: string, at: Date, payload: string) {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret && endpoint.previousSecretUntil && endpoint.previousSecretUntil > at.toISOString())
    secrets.push(endpoint.previousSecret);
  const opened = await Promise.all(secrets.map((sealed) => open(sealed, env)));
  const signed = await Promise.all(opened.map((secret) => standardWebhookSignature(secret, messageId, at, payload)));
  return signed.join(" ");
}

/**
 * A lease on one of the endpoint's delivery slots, taken only while it is enabled, not paused and not full.
 * Its holder is random (53 bits): a clash with a lease of the same endpoint and instant is taken as busy.
 */
const leaseFor = (db: Db, endpointId: number, now: string) => {
  const [high = 0, low = 0] = crypto.getRandomValues(new Uint32Array(2));
  return db
    .insert(webhookLeases)
    .select(
      db
        .select({
          endpointId: webhookEndpoints.id,
          expiresAt: sql<string>`${new Date(Date.parse(now) + LEASE_MS).toISOString()}`.as("expires_at"),
          holder: sql<number>`${(high >>> 11) * 2 ** 32 + low}`.as("holder"),
        })
        .from(webhookEndpoints)
        .where(
          and(
            eq(webhookEndpoints.id, endpointId),
            eq(webhookEndpoints.enabled, true),
            sql`(${webhookEndpoints.pausedUntil} IS NULL OR ${webhookEndpoints.pausedUntil} <= ${now})`,
            sql`(SELECT count(*) FROM ${webhookLeases} WHERE ${webhookLeases.endpointId} = ${endpointId} AND ${webhookLeases.expiresAt} > ${now}) < ${DELIVERY_LIMITS.concurrent}`,
          ),
        ),
    )
    .onConflictDoNothing()
    .returning();
};

type Lease = typeof webhookLeases.$inferSelect;

/** Ends a lease by its key; no lease taken, nothing ends. */
const endLease = (db: Db, lease: Lease | undefined) =>
  db
    .delete(webhookLeases)
    .where(
      lease
        ? and(
            eq(webhookLeases.endpointId, lease.endpointId),
            eq(webhookLeases.expiresAt, lease.expiresAt),
            eq(webhookLeases.holder, lease.holder),
          )
        : sql`0`,
    );

/** The endpoint's queued count, less one delivery. */
const lessOneQueued = sql`max(0, ${webhookEndpoints.inQueue} - 1)`;

/** The endpoint's queued count, less a counted delivery that ended (delivered, gone, given up, or moot). */
const endedStatement = (db: Db, message: WebhookMessage) =>
  db
    .update(webhookEndpoints)
    .set({ inQueue: lessOneQueued })
    .where(and(eq(webhookEndpoints.id, message.endpointId), sql`${message.counted ? 1 : 0} = 1`));

/** A delivery the dead-letter queue gave up on: it no longer counts against its endpoint. */
export async function abandonDelivery(db: Db, message: WebhookMessage): Promise<void> {
  await endedStatement(db, message);
}

/** What became of one message: `moved` went to the slow lane (its endpoint was too slow for the fast one). */
type DeliveryOutcome = "delivered" | "failed" | "waiting" | "moot" | "moved";

/**
 * The deliveries of one message batch from `lane`: endpoints side by side, each endpoint's up to
 * `DELIVERY_LIMITS.concurrent` at once. After one of an endpoint's deliveries fails, its others in the
 * batch wait in the queue instead (an endpoint that fails costs a batch one timeout, not one per
 * message); after one moved to the slow lane, its others follow it there. A message whose turn comes
 * after the batch's deadline (twice the lane's timeout) waits too, so no endpoint holds a batch longer.
 * Answers one settled result per message, in order.
 */
export function deliverWebhooks(
  ctx: Pick<JobContext, "db" | "env">,
  input: { messages: WebhookMessage[]; lane: DeliveryLane },
): Promise<PromiseSettledResult<void>[]> {
  const { db, env } = ctx;
  const { messages, lane } = input;
  const deadline = Date.now() + 2 * LANE_TIMEOUT_MS[lane];
  return runInShares(
    messages,
    (message) => message.endpointId,
    DELIVERY_LIMITS.concurrent,
    (): { stopped?: "failed" | "moved" } => ({}),
    async (message, endpoint) => {
      try {
        if (endpoint.stopped === "moved") await queueOf(env, "slow").send(message);
        else if (endpoint.stopped === "failed" || Date.now() > deadline)
          await wait(env, message, BUSY_WAIT_SECONDS, lane);
        else {
          const outcome = await deliverWebhook(db, env, message, lane);
          if (outcome === "moved" || (outcome === "failed" && !endpoint.stopped)) endpoint.stopped = outcome;
        }
      } catch (error) {
        endpoint.stopped ??= "failed";
        throw error;
      }
    },
  );
}

/** The message goes back to its lane's queue for later; this is not an attempt. */
const wait = (env: Env, message: WebhookMessage, seconds: number, lane: DeliveryLane) =>
  queueOf(env, lane).send(message, { delaySeconds: Math.min(43_200, Math.max(1, Math.ceil(seconds))) });

/** A fetch given up by its timeout signal (AbortSignal.timeout rejects with a TimeoutError). */
const timedOut = (failure: unknown) => failure instanceof Error && failure.name === "TimeoutError";

/**
 * One delivery attempt (a queue message). It waits, without an attempt, while its endpoint is paused or
 * has its deliveries in flight; otherwise the event is signed per Standard Webhooks and POSTed with its
 * lane's timeout through the outbound guard (no redirects). On the fast lane, no answer within
 * `fastLaneMs` is not an attempt: the endpoint and the message move to the slow lane (the receiver may
 * see the message again there, with the same `webhook-id`). 2xx ends it; 410 disables the endpoint;
 * anything else is tried again on the schedule, counts towards the breaker, and an endpoint failing
 * every delivery for 3 days is disabled (`webhook.disabled` is recorded).
 */
async function deliverWebhook(db: Db, env: Env, message: WebhookMessage, lane: DeliveryLane): Promise<DeliveryOutcome> {
  const now = nowIso();
  const {
    lease: [lease],
    endpoint: [endpoint],
    event: [event],
  } = await namedBatch(db, {
    lease: leaseFor(db, message.endpointId, now),
    endpoint: db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, message.endpointId)),
    event: db
      .select()
      .from(events)
      .where(eq(events.id, message.eventId ?? 0)),
  });
  const moot = !endpoint?.enabled || (message.eventId !== undefined && !event);
  if (moot) {
    await db.batch([endLease(db, lease), endedStatement(db, message)]);
    return "moot";
  }
  const endpointLane = laneOf(endpoint, now);
  if (lane === "fast" && endpointLane === "slow") {
    // Moved to the slow lane since this message was sent.
    await Promise.all([endLease(db, lease), queueOf(env, "slow").send(message)]);
    return "moved";
  }
  if (!lease) {
    // Paused by its breaker, or busy: the message waits.
    const paused = endpoint.pausedUntil && endpoint.pausedUntil > now;
    await wait(
      env,
      message,
      paused
        ? (Date.parse(endpoint.pausedUntil as string) - Date.parse(now)) / 1000
        : BUSY_WAIT_SECONDS + Math.random() * BUSY_WAIT_SECONDS,
      endpointLane,
    );
    return "waiting";
  }
  const messageId = event ? `evt_${event.id}` : (message.messageId ?? `msg_test_${randomToken(9)}`);
  const at = new Date();
  const payload = JSON.stringify(
    event
      ? { type: event.type, timestamp: formatDateTime(event.occurredAt), data: eventView(event) }
      : { type: "webhook.test", timestamp: formatDateTime(at), data: { webhookId: endpoint.id } },
  );
  const startedAt = Date.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  let tooSlow = false;
  try {
    const response = await guardedFetch(endpoint.url, outboundPolicy(env), {
      method: "POST",
      timeoutMs: LANE_TIMEOUT_MS[lane],
      maxRedirects: 0,
      headers: {
        "Content-Type": "application/json",
        "webhook-id": messageId,
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": await signatures(env, endpoint, messageId, at, payload),
      },
      body: payload,
    });
    statusCode = response.status;
    await response.body?.cancel();
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
    tooSlow = lane === "fast" && timedOut(failure);
  }
  const latencyMs = Date.now() - startedAt;
  if (tooSlow) return moveToSlowLane(db, env, endpoint.id, lease, message, messageId, latencyMs);
  const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const gone = statusCode === 410;
  const delays = retryDelays(env);
  const delay = delays[message.attempt - 1];
  const retrying = !succeeded && !gone && delay !== undefined;
  const jitter = retrying ? Math.round((delay as number) * 0.1 * Math.random()) : 0;
  const nextAttemptAt = retrying ? new Date(Date.now() + ((delay as number) + jitter) * 1000).toISOString() : null;
  const finishedAt = nowIso();
  const failingSince = succeeded ? null : (endpoint.failingSince ?? finishedAt);
  const disable = gone
    ? "the endpoint answered 410 Gone"
    : failingSince !== null && failingSince < new Date(Date.now() - FAILING_LIMIT_MS).toISOString()
      ? "every delivery failed for 3 days"
      : null;
  const failure = error ?? (succeeded ? null : `HTTP ${statusCode}`);
  // The breaker: the n-th failure in a row pauses the endpoint (and every failure after it, once resumed).
  const pausedUntil = new Date(Date.now() + pauseSeconds(env) * 1000).toISOString();
  const trips = sql`${webhookEndpoints.consecutiveFailures} + 1 >= ${DELIVERY_LIMITS.breakerFailures}`;
  // A delivery that ended leaves its endpoint's queued count in the same write as the endpoint's state.
  const ended = !(retrying && !disable) && message.counted;
  await db.batch([
    db.insert(webhookDeliveries).values({
      endpointId: endpoint.id,
      eventId: event?.id ?? null,
      messageId,
      attempt: message.attempt,
      statusCode,
      latencyMs,
      error: failure,
      succeeded,
      nextAttemptAt,
    }),
    db
      .update(webhookEndpoints)
      .set({
        failingSince,
        ...(succeeded
          ? {
              consecutiveFailures: 0,
              pausedUntil: null,
              pausedReason: null,
              ...(latencyMs < DELIVERY_LIMITS.fastLaneMs ? { slowUntil: null } : {}),
            }
          : {
              consecutiveFailures: sql`${webhookEndpoints.consecutiveFailures} + 1`,
              pausedUntil: sql`CASE WHEN ${trips} THEN ${pausedUntil} ELSE ${webhookEndpoints.pausedUntil} END`,
              pausedReason: sql`CASE WHEN ${trips} THEN ${`${DELIVERY_LIMITS.breakerFailures} or more deliveries in a row failed (last: ${failure})`} ELSE ${webhookEndpoints.pausedReason} END`,
            }),
        ...(disable ? { enabled: false, disabledReason: disable, updatedAt: finishedAt } : {}),
        ...(ended ? { inQueue: lessOneQueued } : {}),
      })
      .where(eq(webhookEndpoints.id, endpoint.id)),
    endLease(db, lease),
    ...(disable
      ? [
          bumpRevisions(db, [webhookRevision(endpoint.id)]),
          db.insert(events).values({
            clientId: endpoint.clientId,
            userId: null,
            type: "webhook.disabled",
            data: JSON.stringify({ webhookId: endpoint.id, url: endpoint.url, reason: disable }),
          }),
        ]
      : []),
  ]);
  metricsOf(env).record({
    event: "webhook_delivery",
    status: statusCode ?? 0,
    result: succeeded ? "delivered" : retrying ? "retry" : "failed",
    durationMs: latencyMs,
  });
  log(succeeded ? "info" : "warn", "webhook delivery", {
    webhookId: endpoint.id,
    messageId,
    attempt: message.attempt,
    statusCode,
    error,
    latencyMs,
    requestId: message.requestId,
  });
  if (retrying && !disable)
    await queueOf(env, lane).send(
      { ...message, messageId, attempt: message.attempt + 1 },
      { delaySeconds: Math.min(43_200, (delay as number) + jitter) },
    );
  return succeeded ? "delivered" : "failed";
}

/** The endpoint did not answer within the fast lane's time: it and the message move to the slow lane. */
async function moveToSlowLane(
  db: Db,
  env: Env,
  endpointId: number,
  lease: Lease,
  message: WebhookMessage,
  messageId: string,
  latencyMs: number,
): Promise<DeliveryOutcome> {
  await db.batch([
    db
      .update(webhookEndpoints)
      .set({ slowUntil: new Date(Date.now() + SLOW_LANE_HOLD_MS).toISOString() })
      .where(eq(webhookEndpoints.id, endpointId)),
    endLease(db, lease),
  ]);
  await queueOf(env, "slow").send({ ...message, messageId });
  metricsOf(env).record({ event: "webhook_delivery", status: 0, result: "slow_lane", durationMs: latencyMs });
  log("warn", "webhook endpoint moved to the slow lane", {
    webhookId: endpointId,
    messageId,
    latencyMs,
    requestId: message.requestId,
  });
  return "moved";
}
