import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { pagingQuery, pathId } from "../../lib/fields";
import {
  CreateWebhook,
  createWebhook,
  deleteWebhook,
  EVENT_TYPES,
  getWebhook,
  listDeliveries,
  listWebhooks,
  ReplayWebhook,
  redeliver,
  replayWebhook,
  rotateWebhookSecret,
  testWebhook,
  UpdateWebhook,
  updateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookWithSecret,
} from "../../services/events";
import { serviceContext } from "../context";
import { Event } from "../events";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Webhooks"];

const webhookParams = z.object({ webhookId: pathId("webhookId") });

export const webhooksRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/webhooks",
      tags,
      summary: "The client's webhook endpoints",
      response: envelope(z.array(Webhook)),
    }),
    async (c) => c.json(ok(await listWebhooks(serviceContext(c))), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/webhooks",
      tags,
      summary: "Register an endpoint; the answer shows its signing secret once",
      request: { body: jsonBody(CreateWebhook) },
      response: envelope(WebhookWithSecret),
    }),
    async (c) => c.json(ok(await createWebhook(serviceContext(c), c.req.valid("json"))), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/webhooks/{webhookId}",
      tags,
      summary: "One endpoint",
      request: { params: webhookParams },
      response: envelope(Webhook),
    }),
    async (c) => c.json(ok(await getWebhook(serviceContext(c), c.req.valid("param").webhookId)), 200),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/webhooks/{webhookId}",
      tags,
      summary: "Change an endpoint (enabling it again clears its failures)",
      request: { params: webhookParams, body: jsonBody(UpdateWebhook) },
      response: envelope(Webhook),
    }),
    async (c) =>
      c.json(ok(await updateWebhook(serviceContext(c), c.req.valid("param").webhookId, c.req.valid("json"))), 200),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/webhooks/{webhookId}",
      tags,
      summary: "Remove an endpoint and its delivery log",
      request: { params: webhookParams },
      response: envelope(Webhook),
    }),
    async (c) => c.json(ok(await deleteWebhook(serviceContext(c), c.req.valid("param").webhookId)), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/webhooks/{webhookId}/rotate",
      tags,
      summary: "A new signing secret (shown once); the old one keeps signing beside it for 24 hours",
      request: { params: webhookParams },
      response: envelope(WebhookWithSecret),
    }),
    async (c) => c.json(ok(await rotateWebhookSecret(serviceContext(c), c.req.valid("param").webhookId)), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/webhooks/{webhookId}/test",
      tags,
      summary: "Send a webhook.test message",
      request: { params: webhookParams },
      response: envelope(EmptyData),
    }),
    async (c) => {
      await testWebhook(serviceContext(c), c.req.valid("param").webhookId);
      return c.json(ok([]), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/webhooks/{webhookId}/replay",
      tags,
      summary: "Deliver again every event after an event id",
      description:
        "`after` is one of the client's events (or 0); a replay covers at most 1,000 events, and one runs per endpoint at a time (409 `replay_in_progress`).",
      request: {
        params: webhookParams,
        body: jsonBody(ReplayWebhook),
      },
      response: envelope(
        z.object({ queued: z.number().int().openapi({ description: "Events it delivers (those subscribed to)" }) }),
      ),
    }),
    async (c) =>
      c.json(
        ok(await replayWebhook(serviceContext(c), c.req.valid("param").webhookId, c.req.valid("json").after)),
        200,
      ),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/webhooks/{webhookId}/deliveries",
      tags,
      summary: "The delivery log, newest first: one row per attempt (kept 30 days)",
      request: { params: webhookParams, query: pagingQuery(500, 50) },
      response: listEnvelope(WebhookDelivery),
    }),
    async (c) => {
      const startedAt = Date.now();
      const { page, itemsPerPage } = c.req.valid("query");
      const deliveries = await listDeliveries(serviceContext(c), c.req.valid("param").webhookId, {
        page,
        itemsPerPage,
      });
      return c.json(list(deliveries, startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
      tags,
      summary: "Send a logged delivery's message once more",
      request: { params: webhookParams.extend({ deliveryId: pathId("deliveryId") }) },
      response: envelope(EmptyData),
    }),
    async (c) => {
      const { webhookId, deliveryId } = c.req.valid("param");
      await redeliver(serviceContext(c), webhookId, deliveryId);
      return c.json(ok([]), 200);
    },
  );

/**
 * The payloads we POST, as OpenAPI 3.1 `webhooks`: one per event type (and the test message), each the
 * Standard Webhooks body `{type, timestamp, data}` where `data` is the event as the feed shows it.
 */
export function registerWebhookPayloads(registry: OpenAPIHono["openAPIRegistry"]) {
  const signed = {
    "webhook-id": {
      description: "evt_<eventId>: the same for every attempt; deduplicate on it",
      schema: { type: "string" as const },
    },
    "webhook-timestamp": { description: "Unix seconds of the attempt", schema: { type: "string" as const } },
    "webhook-signature": {
      description: "v1,<base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`>; two, space-separated, during a rotation",
      schema: { type: "string" as const },
    },
  };
  for (const type of [...EVENT_TYPES, "webhook.test"] as const) {
    registry.registerWebhook({
      operationId: `webhooks.receive.${type}`,
      method: "post",
      path: type,
      tags,
      summary: `The ${type} event`,
      // The receiver authenticates us by the signature, not by a bearer key.
      security: [],
      request: {
        headers: z.object({
          "webhook-id": z.string(),
          "webhook-timestamp": z.string(),
          "webhook-signature": z.string(),
        }),
        body: {
          content: {
            "application/json": {
              schema: z.object({
                type: z.literal(type),
                timestamp: z.string().openapi({
                  description: "When it happened, as every time in the payload: YYYY-MM-DD hh:mm:ss, Europe/Amsterdam",
                }),
                data: type === "webhook.test" ? z.object({ webhookId: z.number().int() }) : Event,
              }),
            },
          },
        },
      },
      responses: {
        200: {
          description: "Any 2xx ends the delivery; 410 disables the endpoint; anything else is retried",
          headers: signed,
        },
      },
    });
  }
}
