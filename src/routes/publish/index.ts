import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import {
  type Outcome,
  PublishAd,
  PublishAds,
  PublishEverywhere,
  type PublishMode,
  PublishResults,
  requestPublishing,
  requestPublishingEverywhere,
  UpdatePublishedAds,
} from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jobPath, jsonBody, LOCATION_OF_JOB } from "../openapi";

const tags = ["Publish"];
const refusals = "Refusals answer `portal: <portal> - adId: <adId> - <reason>`.";
const repeats =
  "A repeated call while the ad's job is still open answers as the first did, with the same job and no second charge.";

/** One ad: a refusal is the answer's error, with the spec's text form; the job is named in Location. */
async function single(c: Context<AppEnv>, mode: PublishMode, body: z.infer<typeof PublishAd>) {
  const [outcome] = await requestPublishing(serviceContext(c), { ...body, adIds: [body.adId], mode });
  if (outcome && !outcome.result) throw new DomainError(outcome.errorDetails);
  if (outcome?.queueItemId) c.header("Location", jobPath(outcome.queueItemId));
  return c.json(ok([]), 200);
}

const summarise = (outcomes: Outcome[]) => ({
  result: outcomes.every((o) => o.result),
  errors: outcomes.flatMap((o) => o.errors),
  data: outcomes,
  errorDetails: outcomes.flatMap((o) => o.errorDetails),
});

/** Several ads: the answer says per ad what happened; one ad's refusal does not stop the others. */
async function batch(c: Context<AppEnv>, mode: PublishMode, body: z.infer<typeof PublishAds>) {
  return c.json(summarise(await requestPublishing(serviceContext(c), { ...body, adIds: body.adId, mode })), 200);
}

/** For "all ads" calls, an ad that is not on the portal has nothing to update or take down: not a failure. */
const withoutUnpublished = (outcomes: Outcome[]) =>
  summarise(outcomes.filter((o) => o.result || o.errorDetails[0]?.code !== "ad_not_published"));

/** batchall: portal `meta` means every portal, for internal clients only. */
async function acrossPortals(
  c: Context<AppEnv>,
  mode: "publish" | "unpublish",
  body: z.infer<typeof PublishEverywhere>,
) {
  const outcomes = await requestPublishingEverywhere(serviceContext(c), { ...body, mode });
  return c.json(mode === "unpublish" ? withoutUnpublished(outcomes) : summarise(outcomes), 200);
}

export const publishRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/publish",
      tags,
      summary: "Publish one ad (queued; a published ad is updated)",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: LOCATION_OF_JOB,
    }),
    (c) => single(c, "publish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/publish",
      tags,
      summary: "Update one published ad",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: LOCATION_OF_JOB,
    }),
    (c) => single(c, "update", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/publish",
      tags,
      summary: "Unpublish one ad, or remove its pending queue item",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: LOCATION_OF_JOB,
    }),
    (c) => single(c, "unpublish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/publish/batch",
      tags,
      summary: "Publish several ads; the answer has a result per ad",
      description: repeats,
      request: { body: jsonBody(PublishAds) },
      response: PublishResults,
    }),
    (c) => batch(c, "publish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/publish/batch",
      tags,
      summary: "Update several ads; the answer has a result per ad",
      description: repeats,
      request: { body: jsonBody(PublishAds) },
      response: PublishResults,
    }),
    (c) => batch(c, "update", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/publish/batch",
      tags,
      summary: "Unpublish several ads; the answer has a result per ad",
      description: repeats,
      request: { body: jsonBody(PublishAds) },
      response: PublishResults,
    }),
    (c) => batch(c, "unpublish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/publish/batchall",
      tags,
      summary: "Publish all the user's active ads to portal_a, portal_b and the website (portal meta)",
      request: { body: jsonBody(PublishEverywhere) },
      response: PublishResults,
    }),
    (c) => acrossPortals(c, "publish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/publish/batchall",
      tags,
      summary: "Unpublish all the user's ads from every portal (portal meta)",
      request: { body: jsonBody(PublishEverywhere) },
      response: PublishResults,
    }),
    (c) => acrossPortals(c, "unpublish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/publish/batchauto",
      tags,
      summary: "Update all the user's active ads published on the portal",
      description: repeats,
      request: { body: jsonBody(UpdatePublishedAds) },
      response: PublishResults,
    }),
    async (c) => {
      const body = c.req.valid("json");
      const outcomes = await requestPublishing(serviceContext(c), {
        userId: body.userId,
        portal: body.portal,
        images: body.images,
        adIds: "allActive",
        mode: "update",
      });
      return c.json(withoutUnpublished(outcomes), 200);
    },
  );
