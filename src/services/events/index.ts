export { readEvents } from "./events";
export { EVENT_TYPES, type EventType } from "./eventTypes";
export {
  CreateWebhook,
  EVENT_SCHEMAS,
  Event,
  EventsQuery,
  KnownEvent,
  ReplayQueued,
  ReplayWebhook,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookTestData,
  WebhookWithSecret,
} from "./schemas";
export { abandonDelivery, deliverWebhooks } from "./webhookDelivery";
export { DELIVERY_LIMITS, type DeliveryLane, dispatchEvents, sendDelivery } from "./webhookDispatch";
export {
  createWebhook,
  deleteWebhook,
  ENDPOINTS_PER_CLIENT,
  getWebhook,
  listDeliveries,
  listWebhooks,
  REPLAY_MAX_EVENTS,
  redeliver,
  replayWebhook,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
} from "./webhooks";
