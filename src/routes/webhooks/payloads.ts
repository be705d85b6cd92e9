import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { EVENT_SCHEMAS, EVENT_TYPES, WebhookTestData } from "../../services/events";
import { tags } from "./params";

/**
 * The payloads we POST, as OpenAPI 3.1 `webhooks`: one per event type (and the test message), each the
 * Standard Webhooks body `{type, timestamp, data}` where `data` is the event as the feed shows it, typed
 * by its type (its `data` too).
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
                data: type === "webhook.test" ? WebhookTestData : EVENT_SCHEMAS[type],
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
