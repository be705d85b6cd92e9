import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { pathId, queryBool } from "../../lib/fields";
import type { PublishTarget } from "../../lib/vocabulary";
import { taggedRead } from "../../middleware/responseCache";
import {
  getUserAdSettings,
  replaceUserAdSettings,
  UserAdSetting,
  UserAdSettings,
  UserAdSettingsInput,
} from "../../services/accounts";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["User ad settings"];

const Query = z.object({ useCache: queryBool().optional() });

const answer = (
  c: Context<AppEnv>,
  userId: number,
  portal: PublishTarget | undefined,
  useCache: boolean | undefined,
) => {
  return taggedRead(c, useCache, userRevision(userId), async () =>
    ok(await getUserAdSettings(serviceContext(c), { userId, portal })),
  );
};

export const userAdSettingsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/user/adsettings/{userId}",
      entityTag: true,
      tags,
      summary: "The user's ad settings for every portal",
      request: { params: z.object({ userId: pathId("userId") }), query: Query },
      response: envelope(UserAdSettings),
    }),
    async (c) => c.json(await answer(c, c.req.valid("param").userId, undefined, c.req.valid("query").useCache), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/user/adsettings/{userId}/{portal}",
      entityTag: true,
      tags,
      summary: "The user's ad settings for one portal",
      request: {
        params: z.object({
          userId: pathId("userId"),
          portal: UserAdSetting.shape.portal.openapi({ param: { name: "portal", in: "path" } }),
        }),
        query: Query,
      },
      response: envelope(UserAdSettings),
    }),
    async (c) => {
      const { userId, portal } = c.req.valid("param");
      return c.json(await answer(c, userId, portal, c.req.valid("query").useCache), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/user/adsettings",
      entityTag: true,
      tags,
      summary: "Create or replace the ad settings of the given portals",
      request: { body: jsonBody(UserAdSettingsInput) },
      response: envelope(UserAdSettings),
    }),
    async (c) => {
      return c.json(ok(await replaceUserAdSettings(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
