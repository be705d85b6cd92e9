/** Publishing: queue items with exactly-once effects, their state machine, crash recovery and the jobs view. */

export { CompleteConnection, ConnectionStart, PortalConnection } from "./connectionSchemas";
export {
  closeDeletedUsersConnections,
  completeConnection,
  disconnect,
  getConnection,
  reencryptTokens,
  startConnection,
  tokensToReseal,
} from "./connections";
export { featureOffers } from "./featureOffers";
export { BuyFeature, Feature, FeaturesQuery } from "./featureSchemas";
export { type Intent, publishMessage, queueIntents, sendItems } from "./intents";
export { Job, JobsQuery } from "./jobSchemas";
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
export { runPublishJobs } from "./publishJobs";
export { expireStaleItems, resendStalledItems } from "./recovery";
export {
  flushUpdateRequests,
  queueFeature,
  replaceExpiredListings,
  requestFeature,
  requestPublishing,
  requestPublishingEverywhere,
  withdrawUnstartedJobs,
} from "./requests";
export {
  AdPublishStatus,
  PublishAd,
  PublishAds,
  PublishEverywhere,
  PublishResults,
  StatusRequest,
  StatusTotals,
  UpdatePublishedAds,
} from "./schemas";
export { adStatuses, statusTotals } from "./status";
export { accepted, type Outcome, type PublishMode, refusal, refused } from "./types";
