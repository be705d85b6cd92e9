// The webhook operations: the endpoints, and what is delivered to them.
import { createRouter } from "../openapi";
import { webhookDeliveriesRouter } from "./deliveries";
import { webhookEndpointsRouter } from "./endpoints";

export { registerWebhookPayloads } from "./payloads";

export const webhooksRouter = createRouter().route("/", webhookEndpointsRouter).route("/", webhookDeliveriesRouter);
