import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { scopeOf } from "../services/shared/access";
import type { ServiceContext } from "../services/shared/context";

/** What every handler hands to the services: the database, the bindings, the caller's scope and the request id. */
export const serviceContext = (c: Context<AppEnv>): ServiceContext => ({
  db: getDb(c.env.DB),
  env: c.env,
  scope: scopeOf(c.get("client")),
  requestId: c.get("requestId"),
});
