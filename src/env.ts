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
  MARKETPLACE_SIMULATOR: DurableObjectNamespace<MarketplaceSimulator>;
  ENVIRONMENT: "development" | "sandbox" | "production";
  RATE_LIMIT_RPS: string;
  RATE_LIMIT_BURST: string;
  WEBSITE_URL: string;
  LOG_REQUESTS: string;
  /** Public base of image URLs: the Worker's own /media/ route. */
  MEDIA_BASE_URL: string;
  /** Where image `path`s are fetched from (Workers have no server file system). */
  MEDIA_ORIGIN: string;
  IMAGE_MAX_BYTES: string;
  /** "simulator" for the bundled marketplace simulator, or the marketplace API's base URL. */
  PORTAL_A_API: string;
  PORTAL_B_API: string;
  TOKEN_ENCRYPTION_KEY?: string;
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
