import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { id, pathId, queryInt } from "../../lib/fields";
import { FEATURE_NAMES } from "../../services/catalogue";
import { featureOffers, requestFeature } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jobPath, jsonBody, LOCATION_OF_JOB } from "../openapi";

const tags = ["Features"];
const portal = z.enum(["portal_a", "portal_b", "website"]);
const Feature = z
  .object({
    feature: z.enum(FEATURE_NAMES),
    displayName: z.union([z.string(), z.literal(false)]),
    available: z.boolean(),
    active: z.boolean(),
    price: z.union([z.number().int(), z.literal(false)]).openapi({ description: "Service price in cents" }),
    priceAdditional: z.number().int().openapi({ description: "Portal price in cents" }),
  })
  .openapi("Feature");

const offers = async (c: Context<AppEnv>, input: { adId: number; portal: z.infer<typeof portal> }) => {
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
        params: z.object({ portal: portal.openapi({ param: { name: "portal", in: "path" } }), adId: pathId("adId") }),
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
      request: { query: z.object({ portal, adId: queryInt() }) },
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
        "Refusals: `portal: <portal> - adId: <adId> - this advertisement is not published` or `... - insufficient means`. A repeated call while the feature's job is open answers as the first did, without a second charge.",
      request: {
        body: jsonBody(
          z
            .object({ adId: id(), portal: z.enum(["portal_a", "portal_b"]), feature: z.enum(FEATURE_NAMES) })
            .openapi("BuyFeature"),
        ),
      },
      response: envelope(EmptyData),
      headers: LOCATION_OF_JOB,
    }),
    async (c) => {
      const outcome = await requestFeature(serviceContext(c), c.req.valid("json"));
      if (!outcome.result) throw new DomainError(outcome.errorDetails);
      if (outcome.queueItemId) c.header("Location", jobPath(outcome.queueItemId));
      return c.json(ok([]), 200);
    },
  );
