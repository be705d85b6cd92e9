import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ERROR_CODES } from "../../lib/errors";
import { priceByWork } from "../../middleware/rateLimit";
import { keepsResponse } from "../../services/operations";
import type { Outcome } from "../../services/publishing";

/** The document's tag of every publishing operation, and the text their descriptions share. */
export const tags = ["Publish"];
export const repeats =
  "A repeated call while the ad's job is still open answers as the first did, with the same job and no second charge.";

/**
 * A batch returns 200 whatever its ads' outcomes. When one of them is a refusal that a single call would
 * answer with a status whose key is freed (`insufficient_means`, `user_locked`: state that can change),
 * the batch's key is freed too, so the same request runs anew once the state is fixed.
 */
function noteStateDependence(c: Context<AppEnv>, outcomes: Outcome[]): void {
  if (outcomes.some((o) => o.errorDetails.some((detail) => !keepsResponse(ERROR_CODES[detail.code].status))))
    c.set("refusalDependsOnState", true);
}

/** The batch's answer: its outcomes summarised, and its key freed when a refusal among them depends on state. */
export function batchResponse(c: Context<AppEnv>, outcomes: Outcome[]) {
  noteStateDependence(c, outcomes);
  priceByWork(c, outcomes.length);
  return c.json(summarise(outcomes), 200);
}

/** Several ads' outcomes as one answer: the envelope is true when every ad's is; each ad says its own. */
const summarise = (outcomes: Outcome[]) => ({
  result: outcomes.every((o) => o.result),
  errors: outcomes.flatMap((o) => o.errors),
  data: outcomes,
  errorDetails: outcomes.flatMap((o) => o.errorDetails),
});

/** For "all ads" calls, an ad that is not on the portal has nothing to update or take down: not a failure. */
export const withoutUnpublished = (outcomes: Outcome[]) =>
  outcomes.filter((o) => o.result || o.errorDetails[0]?.code !== "ad_not_published");
