import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { ApiError } from "../../lib/errors";
import { id } from "../../lib/fields";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody } from "../../lib/openapi";
import { type Outcome, type PublishMode, requestPublishing } from "../../services/publishing";
import { BatchItemResult } from "../ads/schemas";
import { serviceContext } from "../context";

const tags = ["Publish"];
const portal = z.enum(["portal_a", "portal_b", "website"]);
const images = z.boolean().default(true).openapi({ description: "Submit the images too (default true)" });

const One = z.object({ userId: id(), adId: id(), portal, images }).openapi("PublishOne");
const Batch = z.object({ userId: id(), adId: z.array(id()).min(1).max(1000), portal, images }).openapi("PublishBatch");
const All = z
  .object({
    userId: id(),
    portal: z.literal("meta").openapi({ description: "meta: every portal the ad can go to" }),
    images,
    adId: z.unknown().optional(),
  })
  .openapi("PublishAll");
const Auto = z
  .object({ userId: id(), portal, images, adId: z.unknown().optional().openapi({ description: "Ignored" }) })
  .openapi("PublishAuto");

const MODES = { post: "publish", put: "update", delete: "unpublish" } as const;
const STATUS_OF_REFUSAL = (outcome: Outcome) => (outcome.errors[0]?.endsWith("advertisement not found") ? 404 : 409);

/** One ad: a refusal is the answer's error, with the spec's text form. */
async function single(c: Context<AppEnv>, mode: PublishMode, body: z.infer<typeof One>) {
  const { db, scope } = serviceContext(c);
  const [outcome] = await requestPublishing(db, c.env, scope, { ...body, adIds: [body.adId], mode });
  if (outcome && !outcome.result) throw new ApiError(STATUS_OF_REFUSAL(outcome), outcome.errors);
  return ok([]);
}

/** Several ads: the answer says per ad what happened; one ad's refusal does not stop the others. */
async function batch(c: Context<AppEnv>, mode: PublishMode, input: Parameters<typeof requestPublishing>[3]) {
  const { db, scope } = serviceContext(c);
  const outcomes = await requestPublishing(db, c.env, scope, { ...input, mode });
  return { result: outcomes.every((o) => o.result), errors: outcomes.flatMap((o) => o.errors), data: outcomes };
}

const batchResponse = z.object({ result: z.boolean(), errors: z.array(z.string()), data: z.array(BatchItemResult) });

const router = createRouter();
for (const method of ["post", "put", "delete"] as const) {
  const mode = MODES[method];
  router.openapi(
    apiRoute({
      method,
      path: "/publish",
      tags,
      summary: {
        post: "Publish one ad (queued; a published ad is updated)",
        put: "Update one published ad",
        delete: "Unpublish one ad, or remove its pending queue item",
      }[method],
      description: "Refusals answer `portal: <portal> - adId: <adId> - <reason>`.",
      request: { body: jsonBody(One) },
      response: envelope(EmptyData),
    }),
    async (c) => c.json(await single(c, mode, c.req.valid("json")), 200),
  );
  router.openapi(
    apiRoute({
      method,
      path: "/publish/batch",
      tags,
      summary: `${{ post: "Publish", put: "Update", delete: "Unpublish" }[method]} several ads; the answer has a result per ad`,
      request: { body: jsonBody(Batch) },
      response: batchResponse,
    }),
    async (c) => {
      const body = c.req.valid("json");
      return c.json(await batch(c, mode, { ...body, adIds: body.adId, mode }), 200);
    },
  );
}
const BATCHALL = [
  ["post", "publish", "Publish all the user's active ads to portal_a, portal_b and the website (portal meta)"],
  ["delete", "unpublish", "Unpublish all the user's ads from every portal (portal meta)"],
] as const;
for (const [method, mode, summary] of BATCHALL) {
  router.openapi(
    apiRoute({
      method,
      path: "/publish/batchall",
      tags,
      summary,
      request: { body: jsonBody(All) },
      response: batchResponse,
    }),
    async (c) => c.json(await acrossPortals(c, mode, c.req.valid("json")), 200),
  );
}
router.openapi(
  apiRoute({
    method: "put",
    path: "/publish/batchauto",
    tags,
    summary: "Update all the user's active ads published on the portal",
    request: { body: jsonBody(Auto) },
    response: batchResponse,
  }),
  async (c) => {
    const body = c.req.valid("json");
    const result = await batch(c, "update", {
      userId: body.userId,
      portal: body.portal,
      images: body.images,
      adIds: "allActive",
      mode: "update",
    });
    return c.json(withoutUnpublished(result.data), 200);
  },
);

/** batchall: portal `meta` means every portal, for internal clients only. */
async function acrossPortals(c: Context<AppEnv>, mode: "publish" | "unpublish", body: z.infer<typeof All>) {
  if (!c.get("client").internal) throw new ApiError(403, ["portal: meta is for internal clients only"]);
  const results = [];
  for (const portal of ["portal_a", "portal_b", "website"] as const) {
    results.push(
      await batch(c, mode, {
        userId: body.userId,
        portal,
        images: body.images,
        adIds: mode === "publish" ? "allActive" : "all",
        mode,
      }),
    );
  }
  const data = results.flatMap((r) => r.data);
  return mode === "unpublish"
    ? withoutUnpublished(data)
    : { result: data.every((o) => o.result), errors: data.flatMap((o) => o.errors), data };
}

/** For "all ads" calls, an ad that is not on the portal has nothing to update or take down: not a failure. */
function withoutUnpublished(outcomes: Outcome[]) {
  const data = outcomes.filter((o) => o.result || !o.errors[0]?.endsWith("this advertisement is not published"));
  return { result: data.every((o) => o.result), errors: data.flatMap((o) => o.errors), data };
}

export const publishRouter = router;
