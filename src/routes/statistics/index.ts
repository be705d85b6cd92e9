import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { id } from "../../lib/fields";
import { statistics } from "../../services/market";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const date = () => z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: "must be a date yyyy-mm-dd" });
const StatisticsRequest = z
  .object({
    adId: z.union([id(), z.array(id()).min(1).max(500)]).transform((v) => (Array.isArray(v) ? v : [v])),
    dateStart: date(),
    dateEnd: date(),
    showDaily: z.boolean().default(true),
    showTotals: z.boolean().default(true),
    portal: z.enum(["portal_a", "portal_b"]).optional(),
  })
  .refine((r) => r.dateStart <= r.dateEnd, { error: "dateEnd: must not be before dateStart", path: ["dateEnd"] })
  .openapi("StatisticsRequest");

const Daily = z.object({
  date: z.string(),
  views: z.number().int(),
  asqs: z.number().int(),
  bids: z.number().int(),
  url: z.number().int(),
  phone: z.number().int(),
  favorites: z.number().int(),
});
const Totals = z.record(
  z.string(),
  z.object({
    type: z.string(),
    minimum: z.number().int(),
    maximum: z.number().int(),
    total: z.number().int(),
    average: z.number().int(),
  }),
);
const perPortal = (schema: z.ZodType) => z.union([schema, z.literal(false)]);

export const statisticsRouter = createRouter().openapi(
  apiRoute({
    method: "post",
    path: "/statistics",
    tags: ["Statistics"],
    summary: "Daily statistics and totals per portal, combined over the given ads",
    request: { body: jsonBody(StatisticsRequest) },
    response: envelope(
      z
        .object({
          adId: z.array(z.number().int()),
          dateStart: z.string(),
          dateEnd: z.string(),
          showDaily: z.boolean(),
          showTotals: z.boolean(),
          statistics_portal_a: perPortal(z.array(Daily)),
          totals_portal_a: perPortal(Totals),
          statistics_portal_b: perPortal(z.array(Daily)),
          totals_portal_b: perPortal(Totals),
        })
        .openapi("Statistics"),
    ),
  }),
  async (c) => {
    return c.json(ok(await statistics(serviceContext(c), c.req.valid("json"))), 200);
  },
);
