import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { pathId, queryId } from "../../lib/fields";
import { taggedRead } from "../../middleware/responseCache";
import { AdSettings, AdSettingsInput, adRevisionKey, getAdSettings, replaceAdSettings } from "../../services/ads";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Ad settings"];

const answer = async (c: Context<AppEnv>, adId: number) => {
  const ctx = serviceContext(c);
  return taggedRead(c, undefined, await adRevisionKey(ctx, adId), async () => ok(await getAdSettings(ctx, adId)));
};

export const adSettingsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/adsettings/{adId}",
      entityTag: true,
      tags,
      summary: "The ad's settings per portal",
      request: { params: z.object({ adId: pathId("adId") }) },
      response: envelope(AdSettings),
    }),
    async (c) => c.json(await answer(c, c.req.valid("param").adId), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/adsettings",
      entityTag: true,
      tags,
      summary: "The settings of the ad given by `?adId=`",
      request: { query: z.object({ adId: queryId() }) },
      response: envelope(AdSettings),
    }),
    async (c) => c.json(await answer(c, c.req.valid("query").adId), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/adsettings",
      entityTag: true,
      tags,
      summary: "Create or replace the ad's settings of the given portals",
      request: { body: jsonBody(AdSettingsInput) },
      response: envelope(AdSettings),
    }),
    async (c) => {
      return c.json(ok(await replaceAdSettings(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
