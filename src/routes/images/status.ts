// The image jobs: what became of each image sent, per user or per ad.
import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { pagingQuery, pathId } from "../../lib/fields";
import {
  IMAGE_STATUS_PAGE,
  ImageStatus,
  ImageStatusOfPathRequest,
  ImageStatusRequest,
  imageStatus,
  imageStatusPage,
} from "../../services/images";
import type { ServiceContext } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";
import { requireBodyMatchesPath } from "../validation";
import { tags } from "./tags";

const optionalJsonBody = <T extends z.ZodType>(schema: T) => ({ ...jsonBody(schema), required: false });
const userAdParams = z.object({ userId: pathId("userId"), adId: pathId("adId") });
const ImageStatusList = envelope(z.array(ImageStatus));
/** The GET forms page like every list: `page`, `itemsPerPage` (at most and by default 1,000), `totalItems`. */
const ImageStatusQuery = pagingQuery(IMAGE_STATUS_PAGE, IMAGE_STATUS_PAGE).omit({ useCache: true });
const ImageStatusPage = listEnvelope(ImageStatus);
/** POST /imagestatus/<userId>/<adId>: the jobs of the ad the path names. */
const jobsOfAd = (ctx: ServiceContext, params: z.infer<typeof userAdParams>) =>
  imageStatus(ctx, { userId: params.userId, adId: [params.adId] });
/** The body of a POST to a path form, when there is one: what it names must be what the path names. */
const pathBody = (body: unknown) => body as z.infer<typeof ImageStatusOfPathRequest> | undefined;

export const imageStatusRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/imagestatus/{userId}",
      tags,
      summary: "Image jobs of the user, oldest first, a page at a time",
      request: { params: z.object({ userId: pathId("userId") }), query: ImageStatusQuery },
      response: ImageStatusPage,
    }),
    async (c) => {
      const startedAt = Date.now();
      const page = await imageStatusPage(serviceContext(c), { ...c.req.valid("param"), ...c.req.valid("query") });
      return c.json(list(page, startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/imagestatus/{userId}/{adId}",
      tags,
      summary: "Image jobs of one ad, oldest first, a page at a time",
      request: { params: userAdParams, query: ImageStatusQuery },
      response: ImageStatusPage,
    }),
    async (c) => {
      const startedAt = Date.now();
      const { userId, adId } = c.req.valid("param");
      const page = await imageStatusPage(serviceContext(c), { userId, adId: [adId], ...c.req.valid("query") });
      return c.json(list(page, startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagestatus",
      tags,
      summary: "Image jobs of the user's given ads (the first 1,000; GET /imagestatus/<userId> pages)",
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
      summary: "Image jobs of the user, or of the ads the body names (the first 1,000; the GET form pages)",
      request: { params: z.object({ userId: pathId("userId") }), body: optionalJsonBody(ImageStatusOfPathRequest) },
      response: envelope(z.array(ImageStatus)),
    }),
    async (c) => {
      const { userId } = c.req.valid("param");
      const body = pathBody(c.req.valid("json"));
      requireBodyMatchesPath(body, { userId });
      return c.json(ok(await imageStatus(serviceContext(c), { userId, adId: body?.adId })), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/imagestatus/{userId}/{adId}",
      tags,
      summary: "Image jobs of one ad",
      request: { params: userAdParams, body: optionalJsonBody(ImageStatusOfPathRequest) },
      response: ImageStatusList,
    }),
    async (c) => {
      const params = c.req.valid("param");
      requireBodyMatchesPath(pathBody(c.req.valid("json")), params);
      return c.json(ok(await jobsOfAd(serviceContext(c), params)), 200);
    },
  );
