import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { Bid, BidReference, listBids, markBids } from "../../services/market";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody } from "../openapi";

const tags = ["Bids"];

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
