import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { id, pathId } from "../../lib/fields";
import { mediaPathUrl } from "../../lib/outbound";
import { flushRequestedUpdates } from "../../middleware/afterWrites";
import {
  deleteAllImages,
  deleteImages,
  deleteImagesOfAds,
  getImages,
  imageStatus,
  imagesTransformer,
  queueImages,
  rotateImages,
  shiftImage,
  switchImages,
} from "../../services/images";
import type { ServiceContext } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Images"];

export const Image = z
  .object({
    counter: z.number().int().openapi({ description: "Position, from 1" }),
    image: z.object({ url: z.string() }),
    thumbnail: z.object({ url: z.string() }),
  })
  .openapi("Image");
const AdImages = z.object({ adId: z.number().int(), images: z.array(Image) }).openapi("AdImages");

const ImageSource = z
  .object({
    url: z
      .url({ protocol: /^https?$/, error: "must be an http or https URL" })
      .max(2048)
      .optional(),
    path: z
      .string()
      .min(1)
      .max(1024)
      .refine((p) => mediaPathUrl(p, "https://media-origin.invalid/") !== null, {
        error: "must stay below the media origin: no . or .. segments, backslashes, schemes or hosts",
      })
      .optional()
      .openapi({ description: "Resolved against the configured media origin (MEDIA_ORIGIN)" }),
  })
  .refine((s) => (s.url === undefined) !== (s.path === undefined), { error: "give either url or path" });

const ImagesRequest = z
  .object({
    adId: id().optional().openapi({ description: "Must match the path when given" }),
    images: z
      .array(z.object({ image: ImageSource }))
      .min(1)
      .max(100),
    autoupdate: z.boolean().default(true).openapi({ description: "Push the new images to the portals the ad is on" }),
  })
  .openapi("ImagesRequest");

const counters = (min: number, max: number) => z.array(z.number().int().min(1)).min(min).max(max);
const adIdParam = z.object({ adId: pathId("adId") });

const ImageStatus = z
  .object({
    jobId: z.number().int(),
    adId: z.number().int(),
    images: z
      .array(z.object({ URL: z.string(), path: z.string() }))
      .openapi({ description: "The image source; one is empty" }),
    created: z.string(),
    processing: z.boolean(),
    done: z.boolean(),
    result: z.boolean(),
    reason: z.string().openapi({ description: "Why a done job failed; empty otherwise" }),
  })
  .openapi("ImageStatus");

const ImageStatusRequest = z
  .object({
    userId: id(),
    adId: z
      .union([id(), z.array(id()).max(1000)])
      .optional()
      .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v])),
  })
  .openapi("ImageStatusRequest");

/** The path forms of POST /imagestatus/: the user (and one ad) in the path; a body may add ads. */
const ImageStatusOfPathRequest = z
  .object({
    adId: z
      .union([id(), z.array(id()).max(1000)])
      .optional()
      .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v])),
  })
  .openapi("ImageStatusOfPathRequest");
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
        body: jsonBody(z.object({ userId: id(), adId: z.array(id()).min(1).max(100) }).openapi("DeleteImagesBatch")),
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
      request: { body: jsonBody(z.object({ adId: id(), images: counters(1, 100) }).openapi("DeleteImages")) },
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
        body: jsonBody(
          z
            .object({ adId: id(), images: z.tuple([z.number().int().min(1), z.number().int().min(1)]) })
            .openapi("SwitchImages"),
        ),
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
        body: jsonBody(
          z
            .object({ adId: id(), images: z.tuple([z.number().int().min(1), z.number().int().min(1)]) })
            .openapi("ShiftImage"),
        ),
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
        body: jsonBody(
          z
            .object({
              adId: id(),
              images: counters(1, 100),
              rotate: z.union([z.literal(90), z.literal(180), z.literal(270)]),
            })
            .openapi("RotateImages"),
        ),
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
