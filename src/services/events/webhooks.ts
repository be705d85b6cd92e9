import { and, desc, eq, gt, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { events, webhookDeliveries, webhookEndpoints } from "../../db/schema";
import type { Env } from "../../env";
import { randomToken, standardWebhookSignature } from "../../lib/crypto";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { log } from "../../lib/log";
import { metricsOf } from "../../lib/metrics";
import { checkTarget, guardedFetch, OutboundRefused, outboundPolicy } from "../../lib/outbound";
import { open, seal } from "../../lib/secretBox";
import { formatDateTime, nowIso } from "../../lib/time";
import { clientIdOf, ownRows } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { WebhookMessage } from "../shared/jobMessages";
import { type EventType, eventView } from "./events";

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** An endpoint whose every delivery failed for this long is disabled. */
export const FAILING_LIMIT_MS = 3 * 86_400_000;
const DELIVERY_TIMEOUT_MS = 10_000;
/** Seconds before attempt 2, 3, …: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 28 hours in all). */
export const DEFAULT_RETRY_DELAYS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

type EndpointRow = typeof webhookEndpoints.$inferSelect;

const newSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;

const endpointView = (row: EndpointRow) => ({
  webhookId: row.id,
  url: row.url,
  types: row.types ?? [],
  enabled: row.enabled,
  description: row.description,
  disabledReason: row.disabledReason,
  created: formatDateTime(row.createdAt),
  updated: formatDateTime(row.updatedAt),
});
export type WebhookView = ReturnType<typeof endpointView>;

const notFound = (id: number) => DomainError.of("webhook_not_found", `webhookId: webhook ${id} not found`);

async function ownEndpoint(ctx: ServiceContext, id: number): Promise<EndpointRow> {
  const row = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), ownRows(ctx.caller, webhookEndpoints.clientId)))
    .get();
  if (!row) throw notFound(id);
  return row;
}

/** A webhook URL: https (http only in development), and nowhere the outbound guard refuses. */
async function checkUrl(env: Env, url: string): Promise<void> {
  const target = new URL(url);
  if (env.ENVIRONMENT !== "development" && target.protocol !== "https:")
    throw DomainError.of("validation_failed", "url: must be an https URL");
  try {
    await checkTarget(target, outboundPolicy(env));
  } catch (error) {
    if (error instanceof OutboundRefused) throw DomainError.of("validation_failed", `url: ${error.message}`);
    throw error;
  }
}

export async function listWebhooks(ctx: ServiceContext): Promise<WebhookView[]> {
  const rows = await ctx.db
    .select()
    .from(webhookEndpoints)
    .where(ownRows(ctx.caller, webhookEndpoints.clientId))
    .orderBy(webhookEndpoints.id);
  return rows.map(endpointView);
}

export const getWebhook = async (ctx: ServiceContext, id: number) => endpointView(await ownEndpoint(ctx, id));

export interface WebhookInput {
  url: string;
  types?: EventType[] | undefined;
  enabled?: boolean | undefined;
  description?: string | undefined;
}

/** POST /webhooks/: the signing secret is answered this once. New events from now on are delivered. */
export async function createWebhook(ctx: ServiceContext, input: WebhookInput) {
  await checkUrl(ctx.env, input.url);
  const secret = newSecret();
  const [{ last } = { last: 0 }] = await ctx.db
    .select({ last: sql<number>`coalesce(max(${events.id}), 0)` })
    .from(events);
  const row = await ctx.db
    .insert(webhookEndpoints)
    .values({
      clientId: clientIdOf(ctx.caller),
      url: input.url,
      types: input.types?.length ? input.types : null,
      enabled: input.enabled ?? true,
      description: input.description ?? "",
      secret: await seal(secret, ctx.env),
      lastEventId: last,
    })
    .returning()
    .get();
  return { ...endpointView(row), secret };
}

export async function updateWebhook(ctx: ServiceContext, id: number, input: Partial<WebhookInput>) {
  await ownEndpoint(ctx, id);
  if (input.url !== undefined) await checkUrl(ctx.env, input.url);
  const row = await ctx.db
    .update(webhookEndpoints)
    .set({
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.types !== undefined ? { types: input.types.length ? input.types : null } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      // Enabling again starts afresh.
      ...(input.enabled !== undefined
        ? { enabled: input.enabled, ...(input.enabled ? { disabledReason: null, failingSince: null } : {}) }
        : {}),
      updatedAt: nowIso(),
    })
    .where(eq(webhookEndpoints.id, id))
    .returning()
    .get();
  return endpointView(row);
}

export async function deleteWebhook(ctx: ServiceContext, id: number) {
  const row = await ownEndpoint(ctx, id);
  await ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id));
  return endpointView(row);
}

/** POST /webhooks/<id>/rotate: a new secret, answered once; the old one keeps signing for 24 hours. */
export async function rotateWebhookSecret(ctx: ServiceContext, id: number) {
  const row = await ownEndpoint(ctx, id);
  const secret = newSecret();
  const updated = await ctx.db
    .update(webhookEndpoints)
    .set({
      secret: await seal(secret, ctx.env),
      previousSecret: row.secret,
      previousSecretUntil: new Date(Date.now() + SECRET_OVERLAP_MS).toISOString(),
      updatedAt: nowIso(),
    })
    .where(eq(webhookEndpoints.id, id))
    .returning()
    .get();
  return { ...endpointView(updated), secret };
}

/** POST /webhooks/<id>/test: a `webhook.test` message, delivered and logged like any other. */
export async function testWebhook(ctx: ServiceContext, id: number) {
  await ownEndpoint(ctx, id);
  await ctx.env.JOBS.send({ kind: "webhook", endpointId: id, attempt: 1, requestId: ctx.requestId });
}

/** POST /webhooks/<id>/replay: every event after `after` is delivered again (the cursor moves back). */
export async function replayWebhook(ctx: ServiceContext, id: number, after: number) {
  await ownEndpoint(ctx, id);
  await ctx.db.update(webhookEndpoints).set({ lastEventId: after }).where(eq(webhookEndpoints.id, id));
  return { queued: await dispatchEvents(ctx.db, ctx.env, ctx.requestId) };
}

const deliveryView = (row: typeof webhookDeliveries.$inferSelect) => ({
  deliveryId: row.id,
  eventId: row.eventId,
  messageId: row.messageId,
  attempt: row.attempt,
  statusCode: row.statusCode,
  latencyMs: row.latencyMs,
  error: row.error,
  succeeded: row.succeeded,
  nextAttempt: row.nextAttemptAt ? formatDateTime(row.nextAttemptAt) : null,
  created: formatDateTime(row.createdAt),
});

export async function listDeliveries(
  ctx: ServiceContext,
  id: number,
  paging: { page: number; itemsPerPage: number },
): Promise<Page<ReturnType<typeof deliveryView>>> {
  await ownEndpoint(ctx, id);
  const where = eq(webhookDeliveries.endpointId, id);
  const {
    total: [total],
    rows,
  } = await namedBatch(ctx.db, {
    total: ctx.db.select({ n: sql<number>`count(*)` }).from(webhookDeliveries).where(where),
    rows: ctx.db
      .select()
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.id))
      .limit(paging.itemsPerPage)
      .offset((paging.page - 1) * paging.itemsPerPage),
  });
  return { items: rows.map(deliveryView), totalItems: total?.n ?? 0, ...paging };
}

/** POST /webhooks/<id>/deliveries/<deliveryId>/redeliver: that delivery's message once more. */
export async function redeliver(ctx: ServiceContext, id: number, deliveryId: number) {
  await ownEndpoint(ctx, id);
  const delivery = await ctx.db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, id)))
    .get();
  if (!delivery) throw DomainError.of("delivery_not_found", `deliveryId: delivery ${deliveryId} not found`);
  const last = await ctx.db
    .select({ attempt: sql<number>`max(${webhookDeliveries.attempt})` })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, id), eq(webhookDeliveries.messageId, delivery.messageId)))
    .get();
  await ctx.env.JOBS.send({
    kind: "webhook",
    endpointId: id,
    ...(delivery.eventId !== null ? { eventId: delivery.eventId } : {}),
    attempt: (last?.attempt ?? delivery.attempt) + 1,
    requestId: ctx.requestId,
  });
}

/**
 * Hands new events to delivery: per enabled endpoint, the events of its client after its cursor (100 at
 * a time) that it subscribes to. The cursor moves by compare-and-set before the messages go out, so two
 * dispatchers racing never hand one event over twice; when the queue refuses, the cursor goes back.
 * From the queue on, delivery is at least once. Runs after work that writes events, and every minute
 * from the cron.
 */
export async function dispatchEvents(db: Db, env: Env, requestId?: string, pagesPerEndpoint = 10): Promise<number> {
  const endpoints = await db.select().from(webhookEndpoints).where(eq(webhookEndpoints.enabled, true));
  let queued = 0;
  for (const endpoint of endpoints) {
    let cursor = endpoint.lastEventId;
    for (let page = 0; page < pagesPerEndpoint; page += 1) {
      const batch = await db
        .select({ id: events.id, type: events.type })
        .from(events)
        .where(and(eq(events.clientId, endpoint.clientId), gt(events.id, cursor)))
        .orderBy(events.id)
        .limit(100);
      const last = batch.at(-1);
      if (!last) break;
      // The cursor moves first (compare-and-set): of two dispatchers racing, one sends.
      const cursorAt = (from: number, to: number) =>
        db
          .update(webhookEndpoints)
          .set({ lastEventId: to })
          .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.lastEventId, from)))
          .returning({ id: webhookEndpoints.id });
      if ((await cursorAt(cursor, last.id)).length === 0) break;
      const wanted = batch.filter((e) => !endpoint.types || endpoint.types.includes(e.type));
      try {
        if (wanted.length > 0)
          await env.JOBS.sendBatch(
            wanted.map((e) => ({
              body: { kind: "webhook" as const, endpointId: endpoint.id, eventId: e.id, attempt: 1, requestId },
            })),
          );
      } catch (error) {
        // The queue refused: the cursor goes back, and the next run hands these events over again.
        await cursorAt(last.id, cursor);
        throw error;
      }
      queued += wanted.length;
      cursor = last.id;
      if (batch.length < 100) break;
    }
  }
  return queued;
}

const retryDelays = (env: Env) =>
  env.WEBHOOK_RETRY_DELAYS ? env.WEBHOOK_RETRY_DELAYS.split(",").map(Number) : DEFAULT_RETRY_DELAYS;

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
 * One delivery attempt (a queue message): the event signed per Standard Webhooks, POSTed with a 10 s
 * timeout through the outbound guard (no redirects). 2xx ends it; 410 disables the endpoint; anything
 * else is tried again on the schedule; an endpoint failing every delivery for 3 days is disabled, and
 * `webhook.disabled` is recorded.
 */
export async function deliverWebhook(env: Env, db: Db, message: WebhookMessage): Promise<void> {
  const {
    endpoint: [endpoint],
    event: [event],
  } = await namedBatch(db, {
    endpoint: db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, message.endpointId)),
    event: db
      .select()
      .from(events)
      .where(eq(events.id, message.eventId ?? 0)),
  });
  if (!endpoint?.enabled) return;
  if (message.eventId && !event) return; // purged
  const messageId = event ? `evt_${event.id}` : `msg_test_${randomToken(9)}`;
  const at = new Date();
  const payload = JSON.stringify(
    event
      ? { type: event.type, timestamp: new Date(event.occurredAt).toISOString(), data: eventView(event) }
      : { type: "webhook.test", timestamp: at.toISOString(), data: { webhookId: endpoint.id } },
  );
  const startedAt = Date.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  try {
    const response = await guardedFetch(endpoint.url, outboundPolicy(env), {
      method: "POST",
      timeoutMs: DELIVERY_TIMEOUT_MS,
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
  }
  const latencyMs = Date.now() - startedAt;
  const succeeded = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const gone = statusCode === 410;
  const delays = retryDelays(env);
  const delay = delays[message.attempt - 1];
  const retrying = !succeeded && !gone && delay !== undefined;
  const jitter = retrying ? Math.round((delay as number) * 0.1 * Math.random()) : 0;
  const nextAttemptAt = retrying ? new Date(Date.now() + ((delay as number) + jitter) * 1000).toISOString() : null;
  const now = nowIso();
  const failingSince = succeeded ? null : (endpoint.failingSince ?? now);
  const disable = gone
    ? "the endpoint answered 410 Gone"
    : failingSince !== null && failingSince < new Date(Date.now() - FAILING_LIMIT_MS).toISOString()
      ? "every delivery failed for 3 days"
      : null;
  await db.batch([
    db.insert(webhookDeliveries).values({
      endpointId: endpoint.id,
      eventId: event?.id ?? null,
      messageId,
      attempt: message.attempt,
      statusCode,
      latencyMs,
      error: error ?? (succeeded ? null : `HTTP ${statusCode}`),
      succeeded,
      nextAttemptAt,
    }),
    db
      .update(webhookEndpoints)
      .set({
        failingSince,
        ...(disable ? { enabled: false, disabledReason: disable, updatedAt: now } : {}),
      })
      .where(eq(webhookEndpoints.id, endpoint.id)),
    ...(disable
      ? [
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
    await env.JOBS.send(
      { ...message, attempt: message.attempt + 1 },
      { delaySeconds: Math.min(43_200, (delay as number) + jitter) },
    );
}
