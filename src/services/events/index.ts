export { EVENT_TYPES, type EventType, purgeOldEvents, readEvents } from "./events";
export {
  CreateWebhook,
  Event,
  EventsQuery,
  ReplayQueued,
  ReplayWebhook,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookWithSecret,
} from "./schemas";
export {
  abandonDelivery,
  DELIVERY_LIMITS,
  type DeliveryLane,
  deliverWebhooks,
  dispatchEvents,
  sendDelivery,
} from "./webhookDelivery";
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
