import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { id, pathId } from "../../lib/fields";
import { PortalStatus } from "../../services/ads";
import { adStatuses, statusTotals } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Status"];
const AdStatus = z.object({ adId: z.number().int(), portals: z.array(PortalStatus) }).openapi("AdPublishStatus");

const StatusRequest = z
  .object({
    userId: id(),
    adId: z.union([id(), z.array(id()).max(1000)]).transform((v) => (Array.isArray(v) ? v : [v])),
    force: z.boolean().default(false).openapi({ description: "Ask the portals for the live state first (slower)" }),
    page: z.number().int().min(1).default(1),
    itemsPerPage: z.number().int().min(1).max(1000).default(1000),
  })
  .openapi("StatusRequest");

export const statusRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/status/totals/{userId}",
      tags,
      summary: "The number of the user's ads per ad status",
      request: { params: z.object({ userId: pathId("userId") }) },
      response: envelope(
        z.object({
          userId: z.number().int(),
          active: z.number().int(),
          concept: z.number().int(),
          archive: z.number().int(),
          total: z.number().int(),
        }),
      ),
    }),
    async (c) => {
      return c.json(ok(await statusTotals(serviceContext(c), c.req.valid("param").userId)), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/status/{userId}/{adId}",
      tags,
      summary: "Publication status of an ad on every portal",
      request: { params: z.object({ userId: pathId("userId"), adId: pathId("adId") }) },
      response: listEnvelope(AdStatus),
    }),
    async (c) => {
      const { userId, adId } = c.req.valid("param");
      const startedAt = Date.now();
      return c.json(
        list(
          await adStatuses(serviceContext(c), { userId, adIds: [adId], force: false, page: 1, itemsPerPage: 1 }),
          startedAt,
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/status",
      tags,
      summary: "Publication status of several ads",
      request: { body: jsonBody(StatusRequest) },
      response: listEnvelope(AdStatus),
    }),
    async (c) => {
      const { adId, ...body } = c.req.valid("json");
      const startedAt = Date.now();
      return c.json(list(await adStatuses(serviceContext(c), { ...body, adIds: adId }), startedAt), 200);
    },
  );
