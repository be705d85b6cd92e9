// Several ads, or all of a user's: each ad's outcome in the response; one refusal does not stop the others.
import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { MARKETPLACES } from "../../lib/vocabulary";
import {
  PublishAds,
  PublishEverywhere,
  type PublishMode,
  PublishResults,
  requestPublishing,
  requestPublishingEverywhere,
  UpdatePublishedAds,
} from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, jsonBody } from "../openapi";
import { batchResponse, repeats, tags, withoutUnpublished } from "./responses";

async function batch(c: Context<AppEnv>, mode: PublishMode, body: z.infer<typeof PublishAds>) {
  return batchResponse(c, await requestPublishing(serviceContext(c), { ...body, adIds: body.adId, mode }));
}

/** batchall: portal `meta` means every portal, for internal clients only. */
async function acrossPortals(
  c: Context<AppEnv>,
  mode: Exclude<PublishMode, "update">,
  body: z.infer<typeof PublishEverywhere>,
) {
  const outcomes = await requestPublishingEverywhere(serviceContext(c), { ...body, mode });
  return batchResponse(c, mode === "unpublish" ? withoutUnpublished(outcomes) : outcomes);
}

export const publishManyRouter = createRouter()
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
      summary: `Publish all the user's active ads to ${MARKETPLACES.join(", ")} and the website (portal meta)`,
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
      return batchResponse(c, withoutUnpublished(outcomes));
    },
  );
