// A client's webhook endpoints: register, read, change, remove, and rotate their signing secret.
import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { taggedRead } from "../../middleware/responseCache";
import {
  CreateWebhook,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  rotateWebhookSecret,
  UpdateWebhook,
  updateWebhook,
  Webhook,
  WebhookWithSecret,
} from "../../services/events";
import { webhookRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";
import { requireBodyMatchesPath } from "../validation";
import { tags, webhookParams } from "./params";

export const webhookEndpointsRouter = createRouter()
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
      entityTag: true,
      tags,
      summary: "One endpoint",
      request: { params: webhookParams },
      response: envelope(Webhook),
    }),
    async (c) => {
      const { webhookId } = c.req.valid("param");
      return c.json(
        await taggedRead(c, undefined, webhookRevision(webhookId), async () =>
          ok(await getWebhook(serviceContext(c), webhookId)),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/webhooks/{webhookId}",
      entityTag: true,
      tags,
      summary: "Change an endpoint (enabling it again clears its failures)",
      request: { params: webhookParams, body: jsonBody(UpdateWebhook) },
      response: envelope(Webhook),
    }),
    async (c) => {
      const body = c.req.valid("json");
      requireBodyMatchesPath(body, c.req.valid("param"));
      return c.json(ok(await updateWebhook(serviceContext(c), { ...body, ...c.req.valid("param") })), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/webhooks/{webhookId}",
      entityTag: true,
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
      entityTag: true,
      tags,
      summary: "A new signing secret (shown once); the old one keeps signing beside it for 24 hours",
      request: { params: webhookParams },
      response: envelope(WebhookWithSecret),
    }),
    async (c) => c.json(ok(await rotateWebhookSecret(serviceContext(c), c.req.valid("param").webhookId)), 200),
  );
