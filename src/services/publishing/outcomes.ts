/** What a publish or feature call answers per ad: accepted (with the job that carries it) or refused, with the refusal texts the contract fixes. */
import { type ErrorCode, type ErrorDetail, fieldOf } from "../../lib/errors";
import type { JobAction } from "../../lib/vocabulary";
import type { QueuedJob } from "./jobs/queue";

/** What a publish call asks for: every job action but a feature. */
export type PublishMode = Exclude<JobAction, "feature">;

/** What happened to one ad of a publish or feature call; `queueItemId` names the job that carries it. */
export interface Outcome {
  adId: number;
  result: boolean;
  errors: string[];
  /** The same refusals with their codes (empty when accepted). */
  errorDetails: ErrorDetail[];
  queueItemId?: number;
}

/** The spec's reason for each refusal of a publish or feature call, keyed by its code (one spelling each). */
export const REFUSAL_TEXTS = {
  ad_not_found: "advertisement not found",
  ad_archived: "advertisement is archived",
  ad_not_published: "this advertisement is not published",
  user_locked: "user is locked",
  portal_not_connected: "user is not connected to the portal",
  insufficient_means: "insufficient means",
  job_not_retryable: "already live, or replaced by a newer job",
  feature_not_available: "feature not available",
} as const satisfies Partial<Record<ErrorCode, string>>;

/** The spec's text form of a refusal. */
export const refusal = (portal: string, adId: number, reason: string) =>
  `portal: ${portal} - adId: ${adId} - ${reason}`;

export const accepted = (adId: number, queueItemId?: number): Outcome => ({
  adId,
  result: true,
  errors: [],
  errorDetails: [],
  ...(queueItemId ? { queueItemId } : {}),
});

/**
 * The field at fault per refusal: the spec's text always starts `portal: …`, but only some refusals are
 * about the portal; those about no one field (the wallet, the job) name none. A reason that names its
 * own field (`attributes.<portal>.condition: is required`) gives that one instead.
 */
const FIELD_AT_FAULT: Partial<Record<ErrorCode, string>> = {
  ad_not_found: "adId",
  ad_archived: "adId",
  ad_not_published: "adId",
  listing_incomplete: "adId",
  user_locked: "userId",
  user_not_found: "userId",
  portal_not_connected: "portal",
  feature_not_available: "feature",
};

/** A refused ad; several reasons (each missing attribute, say) give one message each. */
export function refused(
  code: ErrorCode,
  portal: string,
  adId: number,
  reason: string | string[],
  amounts?: ErrorDetail["amounts"],
): Outcome {
  const reasons = Array.isArray(reason) ? reason : [reason];
  const messages = reasons.map((r) => refusal(portal, adId, r));
  const errorDetails = reasons.map((r, i) => {
    const field = fieldOf(r) ?? FIELD_AT_FAULT[code];
    return { code, message: messages[i] as string, ...(field ? { field } : {}), ...(amounts ? { amounts } : {}) };
  });
  return { adId, result: false, errors: messages, errorDetails };
}

/**
 * The outcome of a new job once queued: its job; or the refusal of a payer who cannot pay; or, when the
 * listing was not (or no longer) in the state the job needs by the time it was written, the refusal a
 * fresh call would get then.
 */
export function queuedOutcome(portal: string, adId: number, action: JobAction, queued: QueuedJob): Outcome {
  if (queued.jobId !== undefined) return accepted(adId, queued.jobId);
  if (queued.refused === "insufficient_means")
    return refused("insufficient_means", portal, adId, REFUSAL_TEXTS.insufficient_means, {
      price: queued.price,
      balance: queued.balance,
    });
  if (action === "publish") return refused("job_not_retryable", portal, adId, REFUSAL_TEXTS.job_not_retryable);
  return refused("ad_not_published", portal, adId, REFUSAL_TEXTS.ad_not_published);
}
