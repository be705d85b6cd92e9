export { EVENT_TYPES, type EventType, purgeOldEvents, readEvents } from "./events";
export {
  createWebhook,
  deleteWebhook,
  deliverWebhook,
  dispatchEvents,
  getWebhook,
  listDeliveries,
  listWebhooks,
  redeliver,
  replayWebhook,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
} from "./webhooks";
