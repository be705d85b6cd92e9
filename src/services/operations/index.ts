export { readiness } from "./health";
export {
  claimKey,
  IDEMPOTENCY_LOCK_MS,
  keepsAnswer,
  purgeExpiredKeys,
  releaseKey,
  renewKey,
  storeAnswer,
} from "./idempotency";
export { Health } from "./schemas";
