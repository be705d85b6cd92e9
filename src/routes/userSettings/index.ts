import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { taggedRead } from "../../middleware/responseCache";
import {
  getSettings,
  patchSettings,
  replaceSettings,
  SettingsInput,
  SettingsPatch,
  SettingsQuery,
  UserSettings,
} from "../../services/accounts";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["User settings"];
const response = envelope(UserSettings);

const respondWithSettings = async (c: Context<AppEnv>, userId: number, useCache: boolean | undefined) =>
  taggedRead(c, useCache, userRevision(userId), async () => ok(await getSettings(serviceContext(c), userId)));

/** The spec shows these calls under both /user/settings/ and /usersettings/. */
function settingsRoutes(prefix: "/user/settings" | "/usersettings") {
  return createRouter()
    .openapi(
      apiRoute({
        method: "get",
        path: `${prefix}/{userId}`,
        entityTag: true,
        tags,
        summary: "The user's settings",
        request: { params: z.object({ userId: pathId("userId") }), query: SettingsQuery.omit({ userId: true }) },
        response,
      }),
      async (c) =>
        c.json(await respondWithSettings(c, c.req.valid("param").userId, c.req.valid("query").useCache), 200),
    )
    .openapi(
      apiRoute({
        method: "get",
        path: prefix,
        entityTag: true,
        tags,
        summary: "The settings of the user given by `?userId=`",
        request: { query: SettingsQuery },
        response,
      }),
      async (c) => {
        const query = c.req.valid("query");
        return c.json(await respondWithSettings(c, query.userId, query.useCache), 200);
      },
    )
    .openapi(
      apiRoute({
        method: "post",
        path: prefix,
        entityTag: true,
        tags,
        summary: "Create or replace the settings; fields not given return to their defaults",
        request: { body: jsonBody(SettingsInput) },
        response,
      }),
      async (c) => {
        return c.json(ok(await replaceSettings(serviceContext(c), c.req.valid("json"))), 200);
      },
    )
    .openapi(
      apiRoute({
        method: "patch",
        path: prefix,
        entityTag: true,
        tags,
        summary: "Change showcontact, attributes or budgetNotifyLimit; answers the complete settings",
        request: { body: jsonBody(SettingsPatch) },
        response,
      }),
      async (c) => {
        return c.json(ok(await patchSettings(serviceContext(c), c.req.valid("json"))), 200);
      },
    );
}

export const userSettingsRouter = createRouter()
  .route("/", settingsRoutes("/user/settings"))
  .route("/", settingsRoutes("/usersettings"));
