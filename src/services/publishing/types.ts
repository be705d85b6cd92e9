import { detail, type ErrorCode, type ErrorDetail } from "../../lib/errors";
import type { MarketplacePortal } from "../../portals/gateway";

export type PublishPortal = MarketplacePortal | "website";
export type PublishMode = "publish" | "update" | "unpublish";

/** What happened to one ad of a publish or feature call; `queueItemId` names the job that carries it. */
export interface Outcome {
  adId: number;
  result: boolean;
  errors: string[];
  /** The same refusals with their codes (empty when accepted). */
  errorDetails: ErrorDetail[];
  queueItemId?: number;
}

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

/** A refused ad; several reasons (each missing attribute, say) give one message each. */
export function refused(code: ErrorCode, portal: string, adId: number, reason: string | string[]): Outcome {
  const messages = (Array.isArray(reason) ? reason : [reason]).map((r) => refusal(portal, adId, r));
  return { adId, result: false, errors: messages, errorDetails: messages.map((m) => detail(code, m)) };
}
