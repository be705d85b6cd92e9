import type { Context, MiddlewareHandler } from "hono";
import { getDb } from "../db/client";
import type { ApiClient, AppEnv } from "../env";
import { DomainError, detail } from "../lib/errors";
import { cachedClient, findClientByKey } from "../services/accounts";
import { takeIpToken } from "./rateLimit";

/** RFC 6750's challenge of a 401: how to authenticate. */
const CHALLENGE = 'Bearer realm="classified-ads-api"';

/**
 * `Authorization: Bearer <api key>` → the calling client, or 401. A key this isolate knows as valid goes
 * straight through; anything else first takes a token from the caller's per-IP bucket, so a flood of
 * missing or bad keys is refused with 429 before it costs a D1 lookup (and a bad key is looked up once
 * per isolate and 10 seconds, however many requests carry it at once).
 */
export async function callingClient(c: Context<AppEnv>): Promise<ApiClient> {
  const header = c.req.header("Authorization") ?? "";
  const key = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  const known = key ? await cachedClient(key) : null;
  if (!known) {
    await takeIpToken(c);
    if (!key)
      throw new DomainError(detail("missing_api_key", "missing API key: send Authorization: Bearer <key>"), {
        headers: { "WWW-Authenticate": CHALLENGE },
      });
  }
  const client = known ?? (await findClientByKey(getDb(c.env.DB), key as string));
  if (!client)
    throw new DomainError(detail("invalid_api_key", "invalid API key"), {
      headers: { "WWW-Authenticate": `${CHALLENGE}, error="invalid_token"` },
    });
  return client;
}

export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("client", await callingClient(c));
  await next();
};
