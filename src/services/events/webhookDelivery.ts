import { and, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { events, webhookDeliveries, webhookEndpoints, webhookLeases } from "../../db/schema";
import type { Env } from "../../env";
import { randomToken, standardWebhookSignature } from "../../lib/crypto";
import { log } from "../../lib/log";
import { metricsOf } from "../../lib/metrics";
import { guardedFetch, outboundPolicy } from "../../lib/outbound";
import { outboundCall } from "../../lib/outboundClock";
import { open } from "../../lib/secretBox";
import { runInShares } from "../../lib/shares";
import { formatDateTime, nowIso } from "../../lib/time";
import type { JobContext } from "../shared/context";
import type { MessageRouting, WebhookMessage } from "../shared/jobMessages";
import { bumpRevisions, webhookRevision } from "../shared/revisions";
import { eventView } from "./events";
import { DELIVERY_LIMITS, type DeliveryLane, type EndpointRow, laneOf, queueOf } from "./webhookDispatch";

// One delivery at a time: its lease, the signed request, and what its answer does to the endpoint
// (breaker, lanes, retries). Handing events to delivery is webhookDispatch.ts.

/** How long an endpoint has to answer, per lane. */
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

const retryDelays = (env: Env) =>
  env.WEBHOOK_RETRY_DELAYS ? env.WEBHOOK_RETRY_DELAYS.split(",").map(Number) : DEFAULT_RETRY_DELAYS;
const pauseSeconds = (env: Env) => Number(env.WEBHOOK_PAUSE_SECONDS) || DEFAULT_PAUSE_SECONDS;

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
async function deliverWebhook(
  db: Db,
  env: Env,
  message: WebhookMessage & MessageRouting,
  lane: DeliveryLane,
): Promise<DeliveryOutcome> {
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
      .where(
        message.movedFrom === undefined
          ? eq(events.id, message.eventId ?? 0)
          : // Sent before its group moved shards: the event's id there, one of its ids of the eras before
            // (src/db/moves/cursors.ts), which no two of a client's events share.
            and(
              sql`${events.clientId} = (SELECT client_id FROM ${webhookEndpoints} WHERE id = ${message.endpointId})`,
              sql`(${events.originId} = ${message.eventId ?? 0} OR EXISTS (SELECT 1 FROM json_each(${events.origins}) o WHERE o.value = ${message.eventId ?? 0}))`,
            ),
      ),
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
  // An event moved from other shards keeps the webhook-id it was first sent with (its id in its first era).
  const firstId = event && (event.origins?.find((id) => id !== null) ?? event.originId ?? event.id);
  const messageId = firstId ? `evt_${firstId}` : (message.messageId ?? `msg_test_${randomToken(9)}`);
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
    const signature = await signatures(env, endpoint, messageId, at, payload);
    statusCode = await outboundCall(async () => {
      const response = await guardedFetch(endpoint.url, outboundPolicy(env), {
        method: "POST",
        timeoutMs: LANE_TIMEOUT_MS[lane],
        maxRedirects: 0,
        headers: {
          "Content-Type": "application/json",
          "webhook-id": messageId,
          "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
          "webhook-signature": signature,
        },
        body: payload,
      });
      await response.body?.cancel();
      return response.status;
    });
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
  const [, stillThere] = await db.batch([
    // Logged while its endpoint exists: one deleted while the request ran takes its log with it.
    db.insert(webhookDeliveries).select(
      db
        .select({
          id: sql<number>`NULL`.as("id"),
          endpointId: webhookEndpoints.id,
          eventId: sql<number | null>`${event?.id ?? null}`.as("event_id"),
          messageId: sql<string>`${messageId}`.as("message_id"),
          attempt: sql<number>`${message.attempt}`.as("attempt"),
          statusCode: sql<number | null>`${statusCode}`.as("status_code"),
          latencyMs: sql<number>`${latencyMs}`.as("latency_ms"),
          error: sql<string | null>`${failure}`.as("error"),
          succeeded: sql<number>`${succeeded ? 1 : 0}`.as("succeeded"),
          nextAttemptAt: sql<string | null>`${nextAttemptAt}`.as("next_attempt_at"),
          createdAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("created_at"),
        })
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.id, endpoint.id)),
    ),
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
      .where(eq(webhookEndpoints.id, endpoint.id))
      .returning({ id: webhookEndpoints.id }),
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
  // An endpoint deleted while the request ran: the delivery is moot, not tried again.
  if (stillThere.length === 0) return "moot";
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
