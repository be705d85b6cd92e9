import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

export interface RateDecision {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** Seconds until the next token, when refused. */
  retryAfter: number;
  /** Seconds until the bucket is full again. */
  reset: number;
}

/**
 * Token bucket for one API client (one object per client id). The object runs one call at a time and
 * `take` never awaits, so concurrent requests are counted exactly. The bucket lives in memory: an
 * evicted object comes back full, which is what an idle bucket would be anyway.
 */
export class RateLimiter extends DurableObject<Env> {
  private tokens = -1;
  private updatedAt = 0;

  /** The deep health check's probe: the object answers. */
  ping(): "pong" {
    return "pong";
  }

  take(rate: number, burst: number): RateDecision {
    const now = Date.now();
    if (this.tokens < 0) this.tokens = burst;
    else this.tokens = Math.min(burst, this.tokens + ((now - this.updatedAt) / 1000) * rate);
    this.updatedAt = now;

    const allowed = this.tokens >= 1;
    if (allowed) this.tokens -= 1;
    return {
      allowed,
      remaining: Math.floor(this.tokens),
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil((1 - this.tokens) / rate)),
      reset: Math.ceil((burst - this.tokens) / rate),
    };
  }
}
