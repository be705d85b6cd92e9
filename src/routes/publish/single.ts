// One ad: publish, update or take it down on one portal.
import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { PublishAd, type PublishMode, requestPublishing } from "../../services/publishing";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, JOB_HEADERS, jsonBody, nameJobs } from "../openapi";
import { repeats, tags } from "./responses";

const refusals = "Refusals answer `portal: <portal> - adId: <adId> - <reason>`.";

/** One ad: a refusal is the response's error, with the spec's text form; the jobs are named in headers. */
async function single(c: Context<AppEnv>, mode: PublishMode, body: z.infer<typeof PublishAd>) {
  const outcomes = await requestPublishing(serviceContext(c), { ...body, adIds: [body.adId], mode });
  const [outcome] = outcomes;
  if (outcome && !outcome.result) throw new DomainError(outcome.errorDetails);
  nameJobs(
    c,
    outcomes.flatMap((o) => (o.queueItemId ? [o.queueItemId] : [])),
  );
  return c.json(ok([]), 200);
}

export const publishOneRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/publish",
      tags,
      summary: "Publish one ad (queued; a published ad is updated)",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: JOB_HEADERS,
    }),
    (c) => single(c, "publish", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/publish",
      tags,
      summary: "Update one published ad",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: JOB_HEADERS,
    }),
    (c) => single(c, "update", c.req.valid("json")),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/publish",
      tags,
      summary: "Unpublish one ad, or remove its pending queue item",
      description: `${refusals} ${repeats}`,
      request: { body: jsonBody(PublishAd) },
      response: envelope(EmptyData),
      headers: JOB_HEADERS,
    }),
    (c) => single(c, "unpublish", c.req.valid("json")),
  );
