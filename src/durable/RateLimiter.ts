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
 * Token buckets of one API client or one address (one object each). The object runs one call at a time
 * and `take` never awaits, so concurrent requests are counted exactly. Buckets live in memory: an
 * evicted object comes back full, which is what an idle bucket would be anyway. An address's object
 * also remembers the fingerprints of keys that authenticated from it (in its storage), and gives each
 * such key a bucket of its own.
 */
export class RateLimiter extends DurableObject<Env> {
  /** By name: "" is the object's own bucket, a known key's is named by its fingerprint. */
  private buckets = new Map<string, { tokens: number; updatedAt: number }>();

  /** The deep health check's probe: the object answers. */
  ping(): "pong" {
    return "pong";
  }

  take(rate: number, burst: number, name = ""): RateDecision {
    const now = Date.now();
    const bucket = this.buckets.get(name) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * rate);
    bucket.updatedAt = now;
    this.buckets.set(name, bucket);

    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / rate)),
      reset: Math.ceil((burst - bucket.tokens) / rate),
    };
  }

  /**
   * A token for a request from this address with a key the isolate does not know (or none): a key that
   * authenticated from here before takes from a bucket of its own, so a flood of bad keys from the same
   * address (a dealer group behind one NAT) empties the address's bucket and not the valid key's; a
   * random key, or none, takes from the address's.
   */
  takeForKey(fingerprint: string | null, rate: number, burst: number): RateDecision {
    const known = fingerprint !== null && this.ctx.storage.kv.get(goodKey(fingerprint)) !== undefined;
    return this.take(rate, burst, known ? `key:${fingerprint}` : "");
  }

  /** A key authenticated from this address: from now on it has a bucket of its own here. */
  rememberGoodKey(fingerprint: string): void {
    if (this.ctx.storage.kv.get(goodKey(fingerprint)) === undefined)
      this.ctx.storage.kv.put(goodKey(fingerprint), true);
  }
}

const goodKey = (fingerprint: string) => `good-key:${fingerprint}`;
