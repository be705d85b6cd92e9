import { z } from "@hono/zod-openapi";
import { upTo } from "../../lib/fields";
import { EVENT_TYPES } from "./events";

/** The shapes of webhook endpoints and their deliveries: validation, types and the OpenAPI document. */

export const Webhook = z
  .object({
    webhookId: z.number().int(),
    url: z.string(),
    types: z.array(z.string()).openapi({ description: "Subscribed event types; empty: every type" }),
    enabled: z.boolean(),
    description: z.string(),
    disabledReason: z.string().nullable().openapi({ description: "Why delivery was switched off, when it was" }),
    pausedUntil: z.string().nullable().openapi({
      description:
        "Set by the breaker after 5 failed deliveries in a row: deliveries wait until then, and resume by themselves",
    }),
    pausedReason: z.string().nullable(),
    queuedDeliveries: z
      .number()
      .int()
      .openapi({ description: "Deliveries queued for it now (at most 100; later events follow as these end)" }),
    created: z.string(),
    updated: z.string(),
  })
  .openapi("Webhook");
export const WebhookWithSecret = Webhook.extend({
  secret: z.string().openapi({ description: "The signing secret (whsec_…): shown this once" }),
}).openapi("WebhookWithSecret");

const url = z
  .url({ protocol: /^https?$/, error: "must be an https URL" })
  .max(2048)
  .openapi({ description: "https (http only in local development); private and loopback hosts are refused" });
const types = z.array(z.enum(EVENT_TYPES)).max(EVENT_TYPES.length);
export const CreateWebhook = z
  .object({ url, types: types.optional(), enabled: z.boolean().optional(), description: upTo(255).optional() })
  .openapi("CreateWebhook");
export const UpdateWebhook = CreateWebhook.partial().openapi("UpdateWebhook");

export const WebhookDelivery = z
  .object({
    deliveryId: z.number().int(),
    eventId: z.number().int().nullable(),
    messageId: z.string().openapi({ description: "The webhook-id header: the same for every attempt of an event" }),
    attempt: z.number().int(),
    statusCode: z.number().int().nullable(),
    latencyMs: z.number().int().nullable(),
    error: z.string().nullable(),
    succeeded: z.boolean(),
    nextAttempt: z.string().nullable(),
    created: z.string(),
  })
  .openapi("WebhookDelivery");

export const ReplayWebhook = z
  .object({ after: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) })
  .openapi("ReplayWebhook");
