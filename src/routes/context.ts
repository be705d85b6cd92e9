import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { mediaBaseOf } from "../lib/media";
import type { ServiceContext } from "../services/shared";
import { callerOf } from "../services/shared";

/** What every handler hands to the services: the database, the bindings, the caller and the request id. */
export const serviceContext = (c: Context<AppEnv>): ServiceContext => ({
  db: getDb(c.env.DB),
  env: c.env,
  caller: callerOf(c.get("client")),
  mediaBase: mediaBaseOf(c.env, new URL(c.req.url).origin),
  requestId: c.get("requestId"),
});
