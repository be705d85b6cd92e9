import { and, desc, eq, gt, sql } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { groupOfClient, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import { events, webhookDeliveries, webhookEndpoints } from "../../db/schema";
import type { Env } from "../../env";
import { randomToken } from "../../lib/crypto";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { checkTarget, OutboundRefused, outboundPolicy, ResolverUnavailable } from "../../lib/outbound";
import { seal } from "../../lib/secretBox";
import { formatDateTime, nowIso } from "../../lib/time";
import { clientIdOf, ownRows } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { WebhookMessage } from "../shared/jobMessages";
import { bumpRevisions, webhookRevision } from "../shared/revisions";
import type { EventType } from "./eventTypes";
import { EventTypes } from "./schemas";
import { dispatchEvents, sendDelivery } from "./webhookDispatch";

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
/** Endpoints one client may have. */
export const ENDPOINTS_PER_CLIENT = 16;
/** Events one replay may deliver again. */
export const REPLAY_MAX_EVENTS = 1000;

type EndpointRow = typeof webhookEndpoints.$inferSelect;

const newSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;

const endpointView = (row: EndpointRow) => ({
  webhookId: row.id,
  url: row.url,
  // Only a validated write stores them: read back in the write's own terms.
  types: EventTypes.parse(row.types ?? []),
  enabled: row.enabled,
  description: row.description,
  disabledReason: row.disabledReason,
  pausedUntil: row.pausedUntil && row.pausedUntil > nowIso() ? formatDateTime(row.pausedUntil) : null,
  pausedReason: row.pausedUntil && row.pausedUntil > nowIso() ? row.pausedReason : null,
  queuedDeliveries: row.inQueue,
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
    if (error instanceof ResolverUnavailable) throw DomainError.of("dns_unavailable", `url: ${error.message}`);
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

/**
 * POST /webhooks/: the signing secret is answered this once. New events from now on are delivered. A
 * client has at most ENDPOINTS_PER_CLIENT endpoints (checked in the insert, so racing calls cannot pass it).
 */
export async function createWebhook(ctx: ServiceContext, input: WebhookInput) {
  await checkUrl(ctx.env, input.url);
  const secret = newSecret();
  const clientId = clientIdOf(ctx.caller);
  const ofClient = eq(webhookEndpoints.clientId, clientId);
  // Inserted, then taken out again in the same transaction when it repeats a URL or is one too many.
  const inserted = sql`${webhookEndpoints.id} = last_insert_rowid()`;
  const {
    created: [row],
    duplicate,
    overLimit,
  } = await namedBatch(ctx.db, {
    created: ctx.db
      .insert(webhookEndpoints)
      .values({
        id: nextId(webhookEndpoints, groupOfClient(clientId)),
        clientId,
        url: input.url,
        types: input.types?.length ? input.types : null,
        enabled: input.enabled ?? true,
        description: input.description ?? "",
        secret: await seal(secret, ctx.env),
        lastEventId: sql`(SELECT coalesce(max(${events.id}), 0) FROM ${events})`,
      })
      .returning(),
    duplicate: ctx.db
      .delete(webhookEndpoints)
      .where(
        and(
          inserted,
          sql`EXISTS (SELECT 1 FROM ${webhookEndpoints} other WHERE other.client_id = ${clientId} AND other.url = ${input.url} AND other.id != last_insert_rowid())`,
        ),
      )
      .returning({ id: webhookEndpoints.id }),
    overLimit: ctx.db
      .delete(webhookEndpoints)
      .where(and(inserted, sql`(SELECT count(*) FROM ${webhookEndpoints} WHERE ${ofClient}) > ${ENDPOINTS_PER_CLIENT}`))
      .returning({ id: webhookEndpoints.id }),
  });
  if (duplicate.length > 0)
    throw DomainError.of("webhook_exists", `url: this client already has a webhook endpoint for ${input.url}`);
  if (!row || overLimit.length > 0)
    throw DomainError.of(
      "webhook_limit_reached",
      `url: a client may have at most ${ENDPOINTS_PER_CLIENT} webhook endpoints; remove one first`,
    );
  return { ...endpointView(row), secret };
}

export async function updateWebhook(
  ctx: ServiceContext,
  { webhookId: id, ...input }: Partial<WebhookInput> & { webhookId: number },
) {
  const endpoint = await ownEndpoint(ctx, id);
  if (input.url !== undefined) {
    await checkUrl(ctx.env, input.url);
    const taken = await ctx.db
      .select({ id: webhookEndpoints.id })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.clientId, endpoint.clientId), eq(webhookEndpoints.url, input.url)))
      .get();
    if (taken && taken.id !== id)
      throw DomainError.of("webhook_exists", `url: this client already has a webhook endpoint for ${input.url}`);
  }
  const [row] = await ctx.db.batch([
    ctx.db
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
      .returning(),
    bumpRevisions(ctx.db, [webhookRevision(id)], ctx.precondition),
  ]);
  return endpointView(row[0] ?? endpoint);
}

export async function deleteWebhook(ctx: ServiceContext, id: number) {
  const row = await ownEndpoint(ctx, id);
  await ctx.db.batch([
    ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)),
    bumpRevisions(ctx.db, [webhookRevision(id)], ctx.precondition),
  ]);
  return endpointView(row);
}

/** POST /webhooks/<id>/rotate: a new secret, answered once; the old one keeps signing for 24 hours. */
export async function rotateWebhookSecret(ctx: ServiceContext, id: number) {
  const row = await ownEndpoint(ctx, id);
  const secret = newSecret();
  const [updated] = await ctx.db.batch([
    ctx.db
      .update(webhookEndpoints)
      .set({
        secret: await seal(secret, ctx.env),
        previousSecret: row.secret,
        previousSecretUntil: new Date(Date.now() + SECRET_OVERLAP_MS).toISOString(),
        updatedAt: nowIso(),
      })
      .where(eq(webhookEndpoints.id, id))
      .returning(),
    bumpRevisions(ctx.db, [webhookRevision(id)], ctx.precondition),
  ]);
  return { ...endpointView(updated[0] ?? row), secret };
}

/** POST /webhooks/<id>/test: a `webhook.test` message, delivered and logged like any other (one `webhook-id` for all its attempts). */
export async function testWebhook(ctx: ServiceContext, id: number) {
  const endpoint = await ownEndpoint(ctx, id);
  await sendDelivery(ctx.env, endpoint, {
    kind: "webhook",
    endpointId: id,
    messageId: `msg_test_${randomToken(9)}`,
    attempt: 1,
    requestId: ctx.requestId,
  } satisfies WebhookMessage);
}

/**
 * POST /webhooks/<id>/replay: the client's events after `after` (an event of its own, or 0) are
 * delivered again: the cursor moves back, never forward past events not yet handed over. One replay
 * per endpoint at a time, at most REPLAY_MAX_EVENTS events; answers how many it will deliver (those the
 * endpoint subscribes to). They go out at the endpoint's bounded pace.
 */
export async function replayWebhook(
  ctx: ServiceContext,
  { webhookId: id, after }: { webhookId: number; after: number },
) {
  const endpoint = await ownEndpoint(ctx, id);
  const inProgress = () =>
    DomainError.of("replay_in_progress", `webhookId: a replay of webhook ${id} is still being delivered`);
  if (endpoint.lastEventId < endpoint.replayUntil) throw inProgress();
  const ofClient = eq(events.clientId, endpoint.clientId);
  const replayed = and(ofClient, gt(events.id, after));
  const subscribed = endpoint.types ? inList(events.type, endpoint.types) : undefined;
  const {
    from: [from],
    latest: [latest],
    counts: [counts],
  } = await namedBatch(ctx.db, {
    from: ctx.db
      .select({ id: events.id })
      .from(events)
      .where(and(ofClient, eq(events.id, after))),
    latest: ctx.db
      .select({ id: sql<number>`coalesce(max(${events.id}), 0)` })
      .from(events)
      .where(ofClient),
    counts: ctx.db
      .select({
        all: sql<number>`count(*)`,
        wanted: sql<number>`coalesce(sum(${subscribed ?? sql`1`}), 0)`,
      })
      .from(events)
      .where(replayed),
  });
  if (after !== 0 && !from) throw DomainError.of("validation_failed", `after: ${after} is not an event of this client`);
  if ((counts?.all ?? 0) > REPLAY_MAX_EVENTS)
    throw DomainError.of(
      "validation_failed",
      `after: a replay delivers at most ${REPLAY_MAX_EVENTS} events; ${counts?.all} follow event ${after}`,
    );
  const started = await ctx.db
    .update(webhookEndpoints)
    .set({ lastEventId: Math.min(after, endpoint.lastEventId), replayUntil: latest?.id ?? 0 })
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.lastEventId, endpoint.lastEventId)))
    .returning({ id: webhookEndpoints.id });
  if (started.length === 0) throw inProgress();
  await dispatchEvents(ctx, { endpointIds: [id], requestId: ctx.requestId });
  return { queued: counts?.wanted ?? 0 };
}

/** A delivery as the endpoint's log shows it (and the archive keeps it). */
export const deliveryView = (row: typeof webhookDeliveries.$inferSelect) => ({
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
  { webhookId: id, ...paging }: { webhookId: number; page: number; itemsPerPage: number },
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
export async function redeliver(
  ctx: ServiceContext,
  { webhookId: id, deliveryId }: { webhookId: number; deliveryId: number },
) {
  const endpoint = await ownEndpoint(ctx, id);
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
  await sendDelivery(ctx.env, endpoint, {
    kind: "webhook",
    endpointId: id,
    ...(delivery.eventId !== null ? { eventId: delivery.eventId } : { messageId: delivery.messageId }),
    attempt: (last?.attempt ?? delivery.attempt) + 1,
    requestId: ctx.requestId,
  } satisfies WebhookMessage);
}
