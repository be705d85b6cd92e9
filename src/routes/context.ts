import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { scopeOf } from "../services/scope";

/** What every handler hands to the services: the database and the caller's scope. */
export const serviceContext = (c: Context<AppEnv>) => ({ db: getDb(c.env.DB), scope: scopeOf(c.get("client")) });
