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
export { applyEvent, transition } from "./jobs/lifecycle";
export { type Decision, publishMessage, queueJobs, sendJobs } from "./jobs/queue";
export { expireStaleJobs, resendJobsCutByMove, resendStalledJobs, sendJobsAwaitingImages } from "./jobs/recovery";
export { runPublishJobs } from "./jobs/run";
export { Job, JobsQuery } from "./jobs/schemas";
export type { JobEvent, ListingOutcome, PublishJobRow } from "./jobs/states";
export { getJob, type JobFilter, type JobView, listJobs, retryJob } from "./jobs/view";
export { WAIT_BOUND_MS } from "./jobs/waits";
export { accepted, type Outcome, type PublishMode, refusal, refused } from "./outcomes";
export { type PreflightAnswer, preflightPublishing } from "./preflight";
export { requestPublishing, requestPublishingEverywhere, withdrawUnstartedJobs } from "./publishRequests";
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
export { flushUpdateRequests } from "./updateOutbox";
