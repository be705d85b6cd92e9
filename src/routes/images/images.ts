// The images of an ad: read, replace, add and remove them.
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { taggedRead } from "../../middleware/responseCache";
import { adRevisionKey } from "../../services/ads";
import {
  AdImages,
  DeleteImages,
  DeleteImagesBatch,
  deleteAllImages,
  deleteImages,
  deleteImagesOfAds,
  getImages,
  ImagesRequest,
  queueImages,
} from "../../services/images";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";
import { requireBodyMatchesPath } from "../validation";
import { tags } from "./tags";

const adIdParam = z.object({ adId: pathId("adId") });

/** POST and PUT /images/<adId>: the body's adId, when given, must name the same ad as the path. */
function queue(c: Context<AppEnv>, adId: number, body: z.infer<typeof ImagesRequest>, replace: boolean) {
  requireBodyMatchesPath(body, { adId });
  return queueImages(serviceContext(c), { ...body, adId, replace });
}

export const adImagesRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/images/{adId}",
      entityTag: true,
      tags,
      summary: "The ad's images in order",
      request: { params: adIdParam },
      response: envelope(AdImages),
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const { adId } = c.req.valid("param");
      return c.json(
        await taggedRead(c, undefined, await adRevisionKey(ctx, adId), async () => ok(await getImages(ctx, adId))),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/images/{adId}",
      tags,
      summary: "Replace all images of the ad with the given ones",
      description: "Each image becomes a job (see /imagestatus/); the answer shows the images stored so far.",
      request: { params: adIdParam, body: jsonBody(ImagesRequest) },
      response: envelope(AdImages),
    }),
    async (c) => c.json(ok(await queue(c, c.req.valid("param").adId, c.req.valid("json"), true)), 200),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/images/{adId}",
      entityTag: true,
      tags,
      summary: "Add images after the ad's current ones",
      description: "Each image becomes a job (see /imagestatus/); the answer shows the images stored so far.",
      request: { params: adIdParam, body: jsonBody(ImagesRequest) },
      response: envelope(AdImages),
    }),
    async (c) => c.json(ok(await queue(c, c.req.valid("param").adId, c.req.valid("json"), false)), 200),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/images/batch",
      tags,
      summary: "Remove all images of several ads of a user",
      request: {
        body: jsonBody(DeleteImagesBatch),
      },
      response: envelope(z.literal(false)),
    }),
    async (c) => {
      await deleteImagesOfAds(serviceContext(c), c.req.valid("json"));
      return c.json(ok(false as const), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/images/{adId}",
      entityTag: true,
      tags,
      summary: "Remove all images of the ad",
      request: { params: adIdParam },
      response: envelope(z.literal(false)),
    }),
    async (c) => {
      await deleteAllImages(serviceContext(c), c.req.valid("param").adId);
      return c.json(ok(false as const), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/images",
      entityTag: true,
      tags,
      summary: "Remove the given images; the rest are numbered again from 1",
      request: { body: jsonBody(DeleteImages) },
      response: envelope(AdImages),
    }),
    async (c) => {
      return c.json(ok(await deleteImages(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
