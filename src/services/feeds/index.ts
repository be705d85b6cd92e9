/** Feeds: a user's stock fetched from the dealer's own URL on a schedule, applied as a sync when it changed. */
export { queueDueFeeds } from "./dueFeeds";
export { createFeed, deleteFeed, getFeed, listFeeds, runFeedNow, updateFeed } from "./feeds";
export { failFeedFetch, runFeedFetch } from "./fetching";
export { previewFeed } from "./preview";
export { CreateFeed, Feed, FeedIdParam, FeedPreview, FeedsQuery, UpdateFeed } from "./schemas";
