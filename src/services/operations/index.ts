export { readiness } from "./health";
export { claimKey, purgeExpiredKeys, releaseKey, storeAnswer } from "./idempotency";
