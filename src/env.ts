import type { RateLimiter } from "./durable/RateLimiter";
import type { UserTokens } from "./durable/UserTokens";
import type { Job } from "./jobs/types";
import type { MarketplaceSimulator } from "./portals/simulator";

/** Bindings and vars of wrangler.toml; secrets come from `.dev.vars` locally and `wrangler secret put` elsewhere. */
export interface Env {
  DB: D1Database;
  MEDIA: R2Bucket;
  JOBS: Queue<Job>;
  IMAGES: ImagesBinding;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  USER_TOKENS: DurableObjectNamespace<UserTokens>;
  /** Bound in development and sandbox only. */
  MARKETPLACE_SIMULATOR?: DurableObjectNamespace<MarketplaceSimulator>;
  ENVIRONMENT: "development" | "sandbox" | "production";
  RATE_LIMIT_RPS: string;
  RATE_LIMIT_BURST: string;
  /** Per-IP bucket for requests without a valid key and for the public routes. */
  RATE_LIMIT_IP_RPS?: string;
  RATE_LIMIT_IP_BURST?: string;
  WEBSITE_URL: string;
  LOG_REQUESTS: string;
  /** Public base of image URLs: the Worker's own /media/ route. */
  MEDIA_BASE_URL: string;
  /** Where image `path`s are fetched from (Workers have no server file system). */
  MEDIA_ORIGIN: string;
  IMAGE_MAX_BYTES: string;
  /** Ports beside 80 and 443 that outbound fetches (image downloads) may use, comma-separated. */
  OUTBOUND_ALLOWED_PORTS?: string;
  /** DNS-over-HTTPS JSON resolver used to refuse names that point at internal addresses; empty: off. */
  OUTBOUND_DNS_RESOLVER?: string;
  /** "simulator" for the bundled marketplace simulator, or the marketplace API's base URL. */
  PORTAL_A_API: string;
  PORTAL_B_API: string;
  TOKEN_ENCRYPTION_KEY?: string;
  /** The previous key during a rotation: tokens sealed with it still open, and are re-sealed by the cron. */
  TOKEN_ENCRYPTION_KEY_PREVIOUS?: string;
  /** Workers Analytics Engine dataset for metrics; absent in local development. */
  METRICS?: AnalyticsEngineDataset;
  /** The queue the dead-letter consumer serves (its name differs per environment). */
  DEAD_LETTER_QUEUE: string;
  /** Seconds between webhook delivery attempts, comma-separated (default 5 s … 10 h; tests make it 0). */
  WEBHOOK_RETRY_DELAYS?: string;
  /** The deployed commit, set by `npm run deploy`; "development" otherwise. */
  GIT_COMMIT?: string;
}

/** The API client making the call, resolved from its key by the auth middleware. */
export interface ApiClient {
  id: number;
  name: string;
  internal: boolean;
  partner: boolean;
  rate: number | null;
  burst: number | null;
}

export interface AppVariables {
  requestId: string;
  client: ApiClient;
}

export type AppEnv = { Bindings: Env; Variables: AppVariables };
