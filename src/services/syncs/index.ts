/** Stock syncs: a user's whole stock in one call, previewed, applied in steps in the client's lanes, reported per item. */
export { previewSync } from "./preview";
export { startSync, syncIfChanged } from "./receive";
export {
  DEFAULT_MAX_ENDED_PERCENT,
  SYNC_MAX_ITEMS,
  Sync,
  SyncIdParam,
  SyncItem,
  SyncItemReport,
  SyncItemsQuery,
  SyncOptions,
  SyncPlan,
  SyncStock,
  SyncsQuery,
} from "./schemas";
export { failSync, purgeOldSyncs, runSyncStep } from "./steps";
export type { Stock, StockLine } from "./stockLines";
export { digestingBody, itemLines, jsonStockItems, ndjsonLines } from "./stockReader";
export { CHUNK_ITEMS } from "./stockStore";
export { getSync, listSyncItems, listSyncs } from "./syncViews";
