import type { MiddlewareHandler } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";
import { findClientByKey } from "../services/clients";

/** `Authorization: Bearer <api key>` → the calling client, or 401. */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("Authorization") ?? "";
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw new ApiError(401, ["missing API key: send Authorization: Bearer <key>"]);
  const client = await findClientByKey(getDb(c.env.DB), match[1]);
  if (!client) throw new ApiError(401, ["invalid API key"]);
  c.set("client", client);
  await next();
};
