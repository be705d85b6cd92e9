import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { pathId } from "../../lib/fields";
import { BuyFeature, Feature, FeaturesQuery, featureOffers, requestFeature } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, JOB_HEADERS, jsonBody, nameJobs } from "../openapi";

const tags = ["Features"];

const offers = async (c: Context<AppEnv>, input: z.infer<typeof FeaturesQuery>) => {
  return ok(await featureOffers(serviceContext(c), input));
};

export const featuresRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/features/{portal}/{adId}",
      tags,
      summary: "Features of an ad on a portal (the website has none)",
      request: {
        params: z.object({
          portal: FeaturesQuery.shape.portal.openapi({ param: { name: "portal", in: "path" } }),
          adId: pathId("adId"),
        }),
      },
      response: envelope(z.array(Feature)),
    }),
    async (c) => c.json(await offers(c, c.req.valid("param")), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/features",
      tags,
      summary: "Features of an ad on a portal, by query",
      request: { query: FeaturesQuery },
      response: envelope(z.array(Feature)),
    }),
    async (c) => c.json(await offers(c, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/features",
      tags,
      summary: "Buy a feature for an ad published on the portal (queued, paid when queued)",
      description:
        "Refusals: `portal: <portal> - adId: <adId> - this advertisement is not published` or `... - insufficient means`. A repeat while the feature's job is open answers as the first did, charging once.",
      request: {
        body: jsonBody(BuyFeature),
      },
      response: envelope(EmptyData),
      headers: JOB_HEADERS,
    }),
    async (c) => {
      const outcome = await requestFeature(serviceContext(c), c.req.valid("json"));
      if (!outcome.result) throw new DomainError(outcome.errorDetails);
      nameJobs(c, outcome.queueItemId ? [outcome.queueItemId] : []);
      return c.json(ok([]), 200);
    },
  );
