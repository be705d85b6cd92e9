import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";

/**
 * Per-client token bucket in the RateLimiter Durable Object. The IETF RateLimit headers go on every
 * authenticated answer, including the 429 (which also carries Retry-After).
 */
export const rateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const client = c.get("client");
  const rate = client.rate ?? Number(c.env.RATE_LIMIT_RPS);
  const burst = client.burst ?? Number(c.env.RATE_LIMIT_BURST);
  const limiter = c.env.RATE_LIMITER.get(c.env.RATE_LIMITER.idFromName(`client:${client.id}`));
  const decision = await limiter.take(rate, burst);

  const headers = {
    "RateLimit-Policy": `"default";q=${burst};w=${Math.max(1, Math.ceil(burst / rate))}`,
    RateLimit: `"default";r=${decision.remaining};t=${decision.allowed ? decision.reset : decision.retryAfter}`,
  };
  if (!decision.allowed) {
    throw new ApiError(429, ["rate limit exceeded"], [], {
      ...headers,
      "Retry-After": String(decision.retryAfter),
    });
  }
  await next();
  for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
};
