import type { MarketplacePortal } from "../../portals/gateway";

export type PublishPortal = MarketplacePortal | "website";
export type PublishMode = "publish" | "update" | "unpublish";

/** What happened to one ad of a publish or feature call; `queueItemId` names the job that carries it. */
export interface Outcome {
  adId: number;
  result: boolean;
  errors: string[];
  queueItemId?: number;
}

/** The spec's text form of a refusal. */
export const refusal = (portal: string, adId: number, reason: string) =>
  `portal: ${portal} - adId: ${adId} - ${reason}`;

export const accepted = (adId: number, queueItemId?: number): Outcome => ({
  adId,
  result: true,
  errors: [],
  ...(queueItemId ? { queueItemId } : {}),
});

export const refused = (portal: string, adId: number, reason: string): Outcome => ({
  adId,
  result: false,
  errors: [refusal(portal, adId, reason)],
});
