import { ok } from "../../lib/envelope";
import { Statistics, StatisticsRequest, statistics } from "../../services/market";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

export const statisticsRouter = createRouter().openapi(
  apiRoute({
    method: "post",
    path: "/statistics",
    tags: ["Statistics"],
    summary: "Daily statistics and totals per portal, combined over the given ads",
    request: { body: jsonBody(StatisticsRequest) },
    response: envelope(Statistics),
  }),
  async (c) => {
    return c.json(ok(await statistics(serviceContext(c), c.req.valid("json"))), 200);
  },
);
