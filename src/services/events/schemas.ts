import { z } from "@hono/zod-openapi";
import { fixed, queryInt, takingResponse, upTo } from "../../lib/fields";
import { EVENT_TYPES, LATEST } from "./events";

/** The shapes of events, webhook endpoints and their deliveries: validation, types and the OpenAPI document. */

export const Event = z
  .object({
    eventId: z.number().int().openapi({ description: "Increases; resume after the last one you saw" }),
    type: z.enum(EVENT_TYPES),
    occurredAt: z.string(),
    userId: z.number().int().nullable().openapi({ description: "null for events about the client itself" }),
    adId: z.number().int().nullable(),
    portal: z.string().nullable(),
    data: z.record(z.string(), z.unknown()).openapi({ description: "What happened; per type, see the README" }),
  })
  .openapi("Event");

const eventTypes = z
  .string()
  .transform((value) => value.split(",").map((t) => t.trim()))
  .pipe(z.array(z.enum(EVENT_TYPES)))
  .openapi({ type: "string", description: "One type or several, comma-separated" });

export const EventsQuery = z.object({
  after: z
    .union([z.literal(LATEST), queryInt(0)])
    .optional()
    .openapi({
      description:
        "The cursor: events with a larger id (default 0, from the start; not beyond the latest), or `latest`: no events, and the cursor to poll from for what happens next",
    }),
  type: eventTypes.optional(),
  userId: queryInt().optional(),
  limit: queryInt(1, 500).optional().openapi({ description: "At most 500; default 100" }),
});

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
const webhookFields = {
  url,
  types: types.optional(),
  enabled: z.boolean().optional(),
  description: upTo(255).optional(),
};
/** POST /webhooks/ and PUT /webhooks/<id> take an endpoint as answers show it too (the state is ignored). */
export const CreateWebhook = takingResponse(z.object(webhookFields), WebhookWithSecret).openapi("CreateWebhook");
export const UpdateWebhook = takingResponse(
  z.object({
    ...webhookFields,
    url: url.optional(),
    webhookId: fixed(z.number().int().optional()),
  }),
  Webhook,
).openapi("UpdateWebhook");

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
export const ReplayQueued = z.object({
  queued: z.number().int().openapi({ description: "Events it delivers (those subscribed to)" }),
});
