import type { Context, MiddlewareHandler } from "hono";
import type { ApiClient, AppEnv } from "../env";
import { keyFingerprint } from "../lib/crypto";
import { DomainError, detail } from "../lib/errors";
import { cachedClient, findClientByKey } from "../services/accounts";
import { forgetKey, rememberGoodKey, takeIpToken } from "./rateLimit";

/** RFC 6750's challenge of a 401: how to authenticate. */
const CHALLENGE = 'Bearer realm="classified-ads-api"';

/**
 * `Authorization: Bearer <api key>` → the calling client, or 401. A key this isolate knows as valid goes
 * straight through; anything else first takes a token from the caller's per-IP limiter, so a flood of
 * missing or bad keys is refused with 429 before it costs a D1 lookup (and a bad key is looked up once
 * per isolate and 10 seconds, however many requests carry it at once). A key that authenticated from
 * the same address before has a bucket of its own there (by its fingerprint), so a bad-key flood from a
 * shared address does not lock out a valid key; a key that stops authenticating (revoked) loses it.
 */
export async function callingClient(c: Context<AppEnv>): Promise<ApiClient> {
  const header = c.req.header("Authorization") ?? "";
  const key = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (!key) {
    await takeIpToken(c);
    throw new DomainError(detail("missing_api_key", "missing API key: send Authorization: Bearer <key>"), {
      headers: { "WWW-Authenticate": CHALLENGE },
    });
  }
  const known = await cachedClient(key);
  if (known) return known;
  const fingerprint = await keyFingerprint(key);
  await takeIpToken(c, fingerprint);
  const client = await findClientByKey(c.env, key);
  if (!client) {
    await forgetKey(c, fingerprint);
    throw new DomainError(detail("invalid_api_key", "invalid API key"), {
      headers: { "WWW-Authenticate": `${CHALLENGE}, error="invalid_token"` },
    });
  }
  await rememberGoodKey(c, fingerprint);
  return client;
}

export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("client", await callingClient(c));
  await next();
};
