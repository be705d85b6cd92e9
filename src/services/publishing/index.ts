/** Publishing: jobs with exactly-once effects, their state machine, crash recovery and the jobs view. */

export { replaceExpiredListings } from "./autoreplace";
export { CompleteConnection, ConnectionStart, PortalConnection, StartConnection } from "./connectionSchemas";
export {
  closeDeletedUsersConnections,
  completeConnection,
  disconnect,
  finishConsentAtCallback,
  getConnection,
  reencryptTokens,
  startConnection,
  tokensToReseal,
} from "./connections";
export type { RetryOf } from "./decide";
export { featureOffers } from "./featureOffers";
export { BuyFeature, Feature, FeaturesQuery } from "./featureSchemas";
export { queueFeature, requestFeature } from "./features";
export { Job, JobsQuery } from "./jobSchemas";
export { getJob, type JobFilter, type JobView, listJobs, retryJob } from "./jobs";
export {
  applyEvent,
  type JobEvent,
  type ListingOutcome,
  type PublishJobRow,
  transition,
} from "./lifecycle";
export { type PreflightAnswer, preflightPublishing } from "./preflight";
export { runPublishJobs, WAIT_BOUND_MS } from "./publishJobs";
export { requestPublishing, requestPublishingEverywhere, withdrawUnstartedJobs } from "./publishRequests";
export { type NewJob, publishMessage, queueJobs, sendJobs } from "./queueJobs";
export { expireStaleJobs, resendStalledJobs } from "./recovery";
export {
  AdPublishStatus,
  Preflight,
  PreflightRequest,
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
export { flushUpdateRequests } from "./updateOutbox";
