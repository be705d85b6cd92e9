import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { AdPublishStatus, adStatuses, StatusRequest, StatusTotals, statusTotals } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Status"];

export const statusRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/status/totals/{userId}",
      tags,
      summary: "The number of the user's ads per ad status",
      request: { params: z.object({ userId: pathId("userId") }) },
      response: envelope(StatusTotals),
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
      response: listEnvelope(AdPublishStatus),
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
      response: listEnvelope(AdPublishStatus),
    }),
    async (c) => {
      const { adId, ...body } = c.req.valid("json");
      const startedAt = Date.now();
      return c.json(list(await adStatuses(serviceContext(c), { ...body, adIds: adId }), startedAt), 200);
    },
  );
