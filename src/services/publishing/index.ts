/** Publishing: queue items with exactly-once effects, their state machine, crash recovery and the jobs view. */

export {
  completeConnection,
  disconnect,
  getConnection,
  reencryptTokens,
  startConnection,
  tokensToReseal,
} from "./connections";
export { runPublishJobs } from "./delivery";
export { featureOffers } from "./featureOffers";
export { type Intent, publishMessage, queueIntents, sendItems } from "./intents";
export { getJob, type JobFilter, type JobKind, type JobView, listJobs, retryJob } from "./jobs";
export {
  applyEvent,
  type ItemEvent,
  type ItemKind,
  JOB_KINDS,
  type ListingOutcome,
  type QueueItem,
  transition,
} from "./lifecycle";
export { expireStaleItems, resendStalledItems } from "./recovery";
export {
  flushUpdateRequests,
  queueFeature,
  replaceExpiredListings,
  requestFeature,
  requestPublishing,
  requestPublishingEverywhere,
} from "./requests";
export { PublishAd, PublishAds, PublishEverywhere, PublishResults, UpdatePublishedAds } from "./schemas";
export { adStatuses, statusTotals } from "./status";
export { accepted, type Outcome, type PublishMode, type PublishPortal, refusal, refused } from "./types";
