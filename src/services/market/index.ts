export { listBids, markBids, pullMarketData, statistics } from "./marketData";
