import type { Context, MiddlewareHandler } from "hono";
import type { RateDecision } from "../durable/RateLimiter";
import type { AppEnv } from "../env";
import { DomainError, detail } from "../lib/errors";

/** The RateLimiter Durable Object named `name` (a client's, or an address's). */
const limiterOf = (c: Context<AppEnv>, name: string) => c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(name));
type Limiter = ReturnType<typeof limiterOf>;

/** The IETF RateLimit headers of a decision. */
const rateLimitHeaders = (decision: RateDecision, rate: number, burst: number) => ({
  "RateLimit-Policy": `"default";q=${burst};w=${Math.max(1, Math.ceil(burst / rate))}`,
  RateLimit: `"default";r=${decision.remaining};t=${decision.allowed ? decision.reset : decision.retryAfter}`,
});

/**
 * Takes one token from a bucket of the RateLimiter Durable Object `name` (`decide` says which); answers
 * the IETF RateLimit headers for the response, or throws the 429 (with them and Retry-After).
 */
async function takeToken(
  c: Context<AppEnv>,
  name: string,
  rate: number,
  burst: number,
  decide: (limiter: Limiter) => Promise<RateDecision> = (limiter) => limiter.take(rate, burst),
) {
  const decision = await decide(limiterOf(c, name));
  const headers = rateLimitHeaders(decision, rate, burst);
  if (!decision.allowed) {
    throw new DomainError(detail("rate_limited", "rate limit exceeded"), {
      headers,
      retryAfterSeconds: decision.retryAfter,
    });
  }
  return headers;
}

/**
 * Per-client token bucket, priced by work: a request is admitted with one token, and one that did
 * several units of work (`workUnits`: a dry run's verdicts, a batch's ads) is charged the rest once done,
 * which may leave the bucket below empty for the requests after it. The IETF RateLimit headers go on
 * every authenticated answer, including the 429 (which also carries Retry-After), with `RateLimit-Cost`
 * the tokens the answer cost.
 */
export const rateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const client = c.get("client");
  const rate = client.rate ?? Number(c.env.RATE_LIMIT_RPS);
  const burst = client.burst ?? Number(c.env.RATE_LIMIT_BURST);
  const name = `client:${client.id}`;
  let headers: Record<string, string> = await takeToken(c, name, rate, burst);
  await next();
  const units = c.get("workUnits") ?? 1;
  if (units > 1) headers = rateLimitHeaders(await limiterOf(c, name).owe(rate, burst, units - 1), rate, burst);
  for (const [header, value] of Object.entries(headers)) c.res.headers.set(header, value);
  c.res.headers.set("RateLimit-Cost", String(units));
};

/** The request did `units` units of work (a dry run's verdicts, a batch's ads): `rateLimit` charges them. */
export const priceByWork = (c: Context<AppEnv>, units: number) => c.set("workUnits", Math.max(1, units));

const addressOf = (c: Context<AppEnv>) => `ip:${c.req.header("CF-Connecting-IP") ?? "unknown"}`;

/**
 * Per-IP token bucket (`CF-Connecting-IP`) for what is not tied to a client: requests with a missing or
 * bad key, malformed pre-authentication headers, and the public routes (media, the OAuth landing page,
 * the simulator). With `keyFingerprint`, a key that authenticated from this address before takes from
 * a bucket of its own there (RateLimiter.takeForKey). Throws the 429.
 */
export const takeIpToken = (c: Context<AppEnv>, keyFingerprint: string | null = null) => {
  const rate = Number(c.env.RATE_LIMIT_IP_RPS ?? 10);
  const burst = Number(c.env.RATE_LIMIT_IP_BURST ?? 50);
  return takeToken(c, addressOf(c), rate, burst, (limiter) => limiter.takeForKey(keyFingerprint, rate, burst));
};

/** The key authenticated from the caller's address: it gets a bucket of its own there. */
export const rememberGoodKey = (c: Context<AppEnv>, keyFingerprint: string) =>
  limiterOf(c, addressOf(c)).rememberGoodKey(keyFingerprint);

/** The key did not authenticate (unknown, or revoked): the caller's address no longer gives it a bucket. */
export const forgetKey = (c: Context<AppEnv>, keyFingerprint: string) =>
  limiterOf(c, addressOf(c)).forgetKey(keyFingerprint);

export const ipRateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const headers = await takeIpToken(c);
  await next();
  // Answers passed on from another Worker (the simulator) have immutable headers: copy first.
  c.res = new Response(c.res.body, c.res);
  for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
};
