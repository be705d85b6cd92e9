import type { Outcome } from "../../services/publishing";

/** The document's tag of every publishing operation, and the text their descriptions share. */
export const tags = ["Publish"];
export const repeats =
  "A repeated call while the ad's job is still open answers as the first did, with the same job and no second charge.";

/** Several ads' outcomes as one answer: the envelope is true when every ad's is; each ad says its own. */
export const summarise = (outcomes: Outcome[]) => ({
  result: outcomes.every((o) => o.result),
  errors: outcomes.flatMap((o) => o.errors),
  data: outcomes,
  errorDetails: outcomes.flatMap((o) => o.errorDetails),
});

/** For "all ads" calls, an ad that is not on the portal has nothing to update or take down: not a failure. */
export const withoutUnpublished = (outcomes: Outcome[]) =>
  summarise(outcomes.filter((o) => o.result || o.errorDetails[0]?.code !== "ad_not_published"));
