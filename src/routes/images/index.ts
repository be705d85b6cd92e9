import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { pathId } from "../../lib/fields";
import { flushRequestedUpdates } from "../../middleware/afterWrites";
import {
  AdImages,
  DeleteImages,
  DeleteImagesBatch,
  deleteAllImages,
  deleteImages,
  deleteImagesOfAds,
  getImages,
  Image,
  ImageStatus,
  ImageStatusOfPathRequest,
  ImageStatusRequest,
  ImagesRequest,
  imageStatus,
  imagesTransformer,
  queueImages,
  RotateImages,
  rotateImages,
  ShiftImage,
  SwitchImages,
  shiftImage,
  switchImages,
} from "../../services/images";
import type { ServiceContext } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Images"];

const adIdParam = z.object({ adId: pathId("adId") });

const optionalJsonBody = <T extends z.ZodType>(schema: T) => ({ ...jsonBody(schema), required: false });
const userAdParams = z.object({ userId: pathId("userId"), adId: pathId("adId") });
const ImageStatusList = envelope(z.array(ImageStatus));
/** GET and POST /imagestatus/<userId>/<adId>: the jobs of the ad the path names. */
const jobsOfAd = (ctx: ServiceContext, params: z.infer<typeof userAdParams>) =>
  imageStatus(ctx, { userId: params.userId, adId: [params.adId] });
const jobsOfAdRoute = (method: "get" | "post") =>
  apiRoute({
    method,
    path: "/imagestatus/{userId}/{adId}",
    tags,
    summary: "Image jobs of one ad",
    request: { params: userAdParams },
    response: ImageStatusList,
  });

/** POST and PUT /images/<adId>: the body's adId, when given, must name the same ad as the path. */
function queue(c: Context<AppEnv>, adId: number, body: z.infer<typeof ImagesRequest>, replace: boolean) {
  if (body.adId !== undefined && body.adId !== adId)
    throw DomainError.of("validation_failed", `adId: ${body.adId} does not match the path (${adId})`);
  return queueImages(serviceContext(c), { ...body, adId, replace });
}

const router = createRouter();
router.use("/image*", flushRequestedUpdates);

export const imagesRouter = router
  .openapi(
    apiRoute({
      method: "get",
      path: "/images/{adId}",
      tags,
      summary: "The ad's images in order",
      request: { params: adIdParam },
      response: envelope(AdImages),
    }),
    async (c) => {
      return c.json(ok(await getImages(serviceContext(c), c.req.valid("param").adId)), 200);
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
      tags,
      summary: "Remove the given images; the rest are numbered again from 1",
      request: { body: jsonBody(DeleteImages) },
      response: envelope(AdImages),
    }),
    async (c) => {
      return c.json(ok(await deleteImages(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imageswitch",
      tags,
      summary: "Swap the positions of two images",
      request: {
        body: jsonBody(SwitchImages),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(ok(await switchImages(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imageshift",
      tags,
      summary: "Move the image at the first counter to the position of the second",
      request: {
        body: jsonBody(ShiftImage),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(ok(await shiftImage(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagerotate",
      tags,
      summary: "Rotate images clockwise by 90, 180 or 270 degrees (original and thumbnail)",
      request: {
        body: jsonBody(RotateImages),
      },
      response: envelope(z.array(Image)),
    }),
    async (c) => {
      return c.json(
        ok(await rotateImages(serviceContext(c), c.req.valid("json"), imagesTransformer(c.env.IMAGES))),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/imagestatus/{userId}",
      tags,
      summary: "Image jobs of the user",
      request: { params: z.object({ userId: pathId("userId") }) },
      response: envelope(z.array(ImageStatus)),
    }),
    async (c) => {
      return c.json(ok(await imageStatus(serviceContext(c), c.req.valid("param"))), 200);
    },
  )
  .openapi(jobsOfAdRoute("get"), async (c) => c.json(ok(await jobsOfAd(serviceContext(c), c.req.valid("param"))), 200))
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagestatus",
      tags,
      summary: "Image jobs of the user's given ads",
      request: { body: jsonBody(ImageStatusRequest) },
      response: envelope(z.array(ImageStatus)),
    }),
    async (c) => {
      return c.json(ok(await imageStatus(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagestatus/{userId}",
      tags,
      summary: "Image jobs of the user, or of the ads the body names",
      request: { params: z.object({ userId: pathId("userId") }), body: optionalJsonBody(ImageStatusOfPathRequest) },
      response: envelope(z.array(ImageStatus)),
    }),
    async (c) => {
      const { userId } = c.req.valid("param");
      const { adId } = (c.req.valid("json") as z.infer<typeof ImageStatusOfPathRequest> | undefined) ?? {};
      return c.json(ok(await imageStatus(serviceContext(c), { userId, adId })), 200);
    },
  )
  .openapi(jobsOfAdRoute("post"), async (c) =>
    c.json(ok(await jobsOfAd(serviceContext(c), c.req.valid("param"))), 200),
  );
