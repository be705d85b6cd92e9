export { listBids, markBids, pullMarketData, statistics } from "./marketData";
export { Bid, BidReference, Statistics, StatisticsRequest } from "./schemas";
export { purgeOldStatistics, STATISTICS_RETENTION_DAYS } from "./statisticsRetention";
