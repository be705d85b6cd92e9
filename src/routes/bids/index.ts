import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { id, pathId } from "../../lib/fields";
import { listBids, markBids } from "../../services/market";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody } from "../openapi";

const tags = ["Bids"];
const Bid = z
  .object({
    bidId: z.number().int().openapi({ description: "The portal's bid id" }),
    adId: z.number().int(),
    portal: z.enum(["portal_a", "portal_b"]),
    amount: z.number().int(),
    name: z.string(),
    message: z.string(),
    isRead: z.boolean(),
    placed: z.string(),
  })
  .openapi("Bid");
const BidReference = z
  .object({
    userId: id(),
    portal: z.enum(["portal_a", "portal_b", "website"]),
    bidId: z
      .array(z.union([z.number().int(), z.string().max(100)]))
      .min(1)
      .max(1000),
  })
  .openapi("BidReference");

const mark = (read: boolean, summary: string) =>
  apiRoute({
    method: read ? "post" : "delete",
    path: "/bids/markasread",
    tags,
    summary,
    request: { body: jsonBody(BidReference) },
    response: envelope(EmptyData),
  });

export const bidsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/bids/{userId}",
      tags,
      summary: "Bids on the user's ads, as pulled from the portals",
      request: { params: z.object({ userId: pathId("userId") }) },
      response: envelope(z.array(Bid)),
    }),
    async (c) => {
      return c.json(ok(await listBids(serviceContext(c), c.req.valid("param"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/bids/{userId}/{adId}",
      tags,
      summary: "Bids on one ad",
      request: { params: z.object({ userId: pathId("userId"), adId: pathId("adId") }) },
      response: envelope(z.array(Bid)),
    }),
    async (c) => {
      return c.json(ok(await listBids(serviceContext(c), c.req.valid("param"))), 200);
    },
  )
  .openapi(mark(true, "Mark bids read"), async (c) => {
    await markBids(serviceContext(c), { ...c.req.valid("json"), read: true });
    return c.json(ok([]), 200);
  })
  .openapi(mark(false, "Mark bids unread"), async (c) => {
    await markBids(serviceContext(c), { ...c.req.valid("json"), read: false });
    return c.json(ok([]), 200);
  });
