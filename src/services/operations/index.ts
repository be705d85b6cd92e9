export { readiness } from "./health";
export {
  claimKey,
  IDEMPOTENCY_LOCK_MS,
  keepsResponse,
  purgeExpiredKeys,
  releaseKey,
  renewKey,
  storeResponse,
} from "./idempotency";
export { Health } from "./schemas";
