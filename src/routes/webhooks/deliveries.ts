import { list, ok } from "../../lib/envelope";
import { pagingQuery, pathId } from "../../lib/fields";
import {
  listDeliveries,
  ReplayQueued,
  ReplayWebhook,
  redeliver,
  replayWebhook,
  testWebhook,
  WebhookDelivery,
} from "../../services/events";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody, listEnvelope } from "../openapi";
import { tags, webhookParams } from "./params";

export const webhookDeliveriesRouter = createRouter()
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
      response: envelope(ReplayQueued),
    }),
    async (c) =>
      c.json(ok(await replayWebhook(serviceContext(c), { ...c.req.valid("param"), ...c.req.valid("json") })), 200),
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
      const { webhookId } = c.req.valid("param");
      const deliveries = await listDeliveries(serviceContext(c), { webhookId, page, itemsPerPage });
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
      await redeliver(serviceContext(c), { webhookId, deliveryId });
      return c.json(ok([]), 200);
    },
  );
