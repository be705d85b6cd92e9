import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list, ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { MARKETPLACES } from "../../lib/vocabulary";
import { priceByWork } from "../../middleware/rateLimit";
import { answerEntityTag, withCache } from "../../middleware/responseCache";
import {
  ADS_REVISION,
  BatchItemResult,
  createAd,
  DeleteAdsBatch,
  deleteAd,
  deleteAdsBatch,
  PatchAd,
  PatchAdsBatch,
  patchAdsBatch,
  setAdStatus,
  updateAd,
} from "../../services/ads";
import {
  Ad,
  AdsQuery,
  adsAfterBoundary,
  adsPartOf,
  adsSampleOf,
  adViewsOf,
  CreateAd,
  deepPageBoundary,
  getAd,
  mergeAdsParts,
  mergeDeepPage,
  SimpleAd,
  sampledDeepPage,
  searchAds,
  UpdateAd,
} from "../../services/adViews";
import { withdrawUnstartedJobs } from "../../services/publishing";
import { userRevision } from "../../services/shared";
import { onEveryShard } from "../acrossShards";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Ads"];

/**
 * The ads a page of every shard shows: a deep page by number found through each shard's sample (two
 * queries per shard, whatever its depth: `sampledDeepPage`), any other from each shard's part up to it.
 */
async function shownOfEveryShard(c: Context<AppEnv>, query: z.infer<typeof AdsQuery>) {
  if (sampledDeepPage(query)) {
    const sampled = await onEveryShard(c, (ctx) => adsSampleOf(ctx, query));
    const boundary = deepPageBoundary(query, sampled);
    if (boundary)
      return mergeDeepPage(
        query,
        sampled,
        await onEveryShard(c, (ctx, part) => adsAfterBoundary(ctx, { query, boundary, part })),
      );
  }
  return mergeAdsParts(query, await onEveryShard(c, (ctx) => adsPartOf(ctx, query)));
}

/**
 * An internal client's list of every ad, from every shard: the ids of each shard's part, merged in the
 * list's order, then the views of the ads shown, each from its shard (two queries per shard).
 */
async function adsOfEveryShard(c: Context<AppEnv>, query: z.infer<typeof AdsQuery>) {
  const { shown, ...page } = await shownOfEveryShard(c, query);
  const views = await onEveryShard(c, (ctx, at) =>
    adViewsOf(ctx, { simple: query.simple, adIds: shown.filter((ad) => ad.part === at).map((ad) => ad.adId) }),
  );
  return { ...page, items: shown.flatMap(({ part, adId }) => views[part]?.get(adId) ?? []) };
}

export const adsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/ads",
      entityTag: true,
      tags,
      summary: "Search ads",
      description: `With \`userId\`, the answer carries that user's \`ETag\` (for a conditional \`PUT\` or \`PATCH\` of its ads). Bracket notation for arrays and objects: \`order[0][field]=price&order[0][descending]=true\`, \`adId[]=1&adId[]=2\` or \`adId=1,2\`, \`searchattributes[0][portal]=${MARKETPLACES[0]}&searchattributes[0][key]=mileage&searchattributes[0][value_lessequal]=100000\`.`,
      request: { query: AdsQuery },
      response: listEnvelope(z.union([Ad, SimpleAd])),
    }),
    async (c) => {
      const query = c.req.valid("query");
      const startedAt = Date.now();
      // One user's ads carry the user's ETag, for a conditional PUT or PATCH of one of them.
      if (query.userId !== undefined) await answerEntityTag(c, userRevision(query.userId));
      return c.json(
        await withCache(c, query.useCache, [ADS_REVISION], async () =>
          list(
            c.var.spansShards ? await adsOfEveryShard(c, query) : await searchAds(serviceContext(c), query),
            startedAt,
          ),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/ads",
      tags,
      summary: "Create an ad; answers the created ad",
      request: { body: jsonBody(CreateAd) },
      response: envelope(Ad),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      return c.json(ok(await getAd(ctx, await createAd(ctx, c.req.valid("json")))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/ads",
      entityTag: true,
      tags,
      summary: "Update an ad; attribute sets and settings are replaced per portal given; answers the ad",
      request: { body: jsonBody(UpdateAd) },
      response: envelope(Ad),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      return c.json(ok(await getAd(ctx, await updateAd(ctx, c.req.valid("json")))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "patch",
      path: "/ads",
      entityTag: true,
      tags,
      summary: "Change an ad's status (archiving does not unpublish); answers the ad",
      request: { body: jsonBody(PatchAd) },
      response: envelope(Ad),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      return c.json(ok(await getAd(ctx, await setAdStatus(ctx, c.req.valid("json")))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "patch",
      path: "/ads/batch",
      tags,
      summary: "Change the status of several ads; answers a result per ad (a bad id fails only its own item)",
      request: { body: jsonBody(PatchAdsBatch) },
      response: envelope(z.array(BatchItemResult)),
    }),
    async (c) => {
      const results = await patchAdsBatch(serviceContext(c), c.req.valid("json"));
      priceByWork(c, results.length);
      return c.json(ok(results), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/ads/batch",
      tags,
      summary: "Remove several ads (not unpublished); answers a result per ad",
      request: { body: jsonBody(DeleteAdsBatch) },
      response: envelope(z.array(BatchItemResult)),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const results = await deleteAdsBatch(ctx, c.req.valid("json"));
      await withdrawUnstartedJobs(ctx, { adIds: results.filter((r) => r.result).map((r) => r.adId) });
      priceByWork(c, results.length);
      return c.json(ok(results), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/ads/{adId}",
      entityTag: true,
      tags,
      summary: "Remove an ad; it is not unpublished from any portal",
      request: { params: z.object({ adId: pathId("adId") }) },
      response: envelope(EmptyData),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const { adId } = c.req.valid("param");
      await deleteAd(ctx, adId);
      // Its jobs outlive it: what never started is cancelled and refunded, the rest run or settle.
      await withdrawUnstartedJobs(ctx, { adIds: [adId] });
      return c.json(ok([]), 200);
    },
  );
