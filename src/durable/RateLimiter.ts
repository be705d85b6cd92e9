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
 * such key a bucket of its own: for `GOOD_KEY_TTL_MS` after its last authentication there, at most
 * `GOOD_KEYS_PER_ADDRESS` keys (the least recently seen goes first), and a key that fails to
 * authenticate (revoked) is forgotten at once.
 */
export class RateLimiter extends DurableObject<Env> {
  /** By name: "" is the object's own bucket, a known key's is named by its fingerprint. */
  private buckets = new Map<string, { tokens: number; updatedAt: number }>();

  /** The deep health check's probe: the object answers. */
  ping(): "pong" {
    return "pong";
  }

  take(rate: number, burst: number, name = ""): RateDecision {
    const bucket = this.refilled(rate, burst, name);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return this.decision(bucket, allowed, rate, burst);
  }

  /**
   * Work a request did beyond the token it was admitted with (the other ads of a batch or a dry run):
   * taken however few tokens are left, so the bucket may go below empty; the requests after it wait
   * until the refill has paid that back.
   */
  owe(rate: number, burst: number, units: number, name = ""): RateDecision {
    const bucket = this.refilled(rate, burst, name);
    bucket.tokens -= units;
    return this.decision(bucket, true, rate, burst);
  }

  private refilled(rate: number, burst: number, name: string) {
    const now = Date.now();
    const bucket = this.buckets.get(name) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * rate);
    bucket.updatedAt = now;
    this.buckets.set(name, bucket);
    return bucket;
  }

  private decision(bucket: { tokens: number }, allowed: boolean, rate: number, burst: number): RateDecision {
    return {
      allowed,
      remaining: Math.max(0, Math.floor(bucket.tokens)),
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
    return this.take(rate, burst, fingerprint !== null && this.knows(fingerprint) ? `key:${fingerprint}` : "");
  }

  /** A key authenticated from this address: for the next hour it has a bucket of its own here. */
  rememberGoodKey(fingerprint: string): void {
    this.ctx.storage.kv.put(goodKey(fingerprint), Date.now());
    const remembered = [...this.ctx.storage.kv.list<number>({ prefix: GOOD_KEY_PREFIX })];
    if (remembered.length <= GOOD_KEYS_PER_ADDRESS) return;
    remembered.sort(([, a], [, b]) => a - b);
    for (const [name] of remembered.slice(0, remembered.length - GOOD_KEYS_PER_ADDRESS))
      this.ctx.storage.kv.delete(name);
  }

  /** A key that no longer authenticates (revoked): it takes from the address's bucket again, at once. */
  forgetKey(fingerprint: string): void {
    this.ctx.storage.kv.delete(goodKey(fingerprint));
    this.buckets.delete(`key:${fingerprint}`);
  }

  /** Whether the key authenticated here within the last hour; an older memory is dropped. */
  private knows(fingerprint: string): boolean {
    const seen = this.ctx.storage.kv.get<number>(goodKey(fingerprint));
    if (seen === undefined) return false;
    if (typeof seen === "number" && Date.now() - seen < GOOD_KEY_TTL_MS) return true;
    this.forgetKey(fingerprint);
    return false;
  }
}

/** How long an address remembers a key that authenticated from it without seeing it again. */
export const GOOD_KEY_TTL_MS = 60 * 60 * 1000;
/** Keys an address remembers at most (a shared NAT of many dealer systems stays bounded). */
export const GOOD_KEYS_PER_ADDRESS = 100;
export const GOOD_KEY_PREFIX = "good-key:";
const goodKey = (fingerprint: string) => `${GOOD_KEY_PREFIX}${fingerprint}`;
