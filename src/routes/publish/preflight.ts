// A dry run of publishing: what each ad and target would come to, with nothing changed.

import { BASE_PATH } from "../../lib/calls";
import { ok } from "../../lib/envelope";
import { priceByWork } from "../../middleware/rateLimit";
import { Preflight, PreflightRequest, preflightPublishing } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";
import { tags } from "./responses";

export const publishPreflightRouter = createRouter().openapi(
  apiRoute({
    method: "post",
    path: "/publish/preflight",
    tags,
    summary: "Dry run: what publishing these ads would do (nothing is queued, charged or listed)",
    description: "Changes nothing and keeps no Idempotency-Key. See the guide's dry run.",
    request: { body: jsonBody(PreflightRequest) },
    response: envelope(Preflight),
  }),
  async (c) => {
    const { adId, ...body } = c.req.valid("json");
    const connectBase = `${new URL(c.req.url).origin}${BASE_PATH}/oauth/${body.userId}`;
    const answer = await preflightPublishing(serviceContext(c), { ...body, adIds: adId, connectBase });
    // Each verdict is a listing read and, on a marketplace, a review there: a token each.
    priceByWork(c, answer.verdicts.length);
    return c.json(ok(answer), 200);
  },
);
