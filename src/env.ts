import type { D1Usage } from "./db/meter";
import type { Precondition } from "./lib/entityTags";

/**
 * Bindings, vars and secrets, as `wrangler types` generates them from wrangler.toml and .dev.vars into
 * worker-configuration.d.ts (`npm run types`; `npm test` fails when that file is stale).
 */
export type Env = Cloudflare.Env;

/** The API client making the call, resolved from its key by the auth middleware. */
export interface ApiClient {
  id: number;
  name: string;
  internal: boolean;
  partner: boolean;
  rate: number | null;
  burst: number | null;
  /** The shard its group's rows are on (src/db/shards.ts). */
  shard: number;
}

export interface AppVariables {
  requestId: string;
  client: ApiClient;
  /** The shard the request's D1 session is on (set by the d1Session middleware, src/db/shards.ts). */
  shard?: number;
  /** An internal client's request that names no row: its lists span every shard (src/routes/acrossShards.ts). */
  spansShards?: boolean;
  /** What the request's D1 session read and wrote (set by the d1Session middleware). */
  d1Usage?: D1Usage;
  /**
   * A success that carries a refusal depending on state that can change (a batch's per-ad
   * `insufficient_means`): its Idempotency-Key is freed as that refusal's own response would free it.
   */
  refusalDependsOnState?: boolean;
  /**
   * The units of work the request did when more than one (a dry run's verdicts, a batch's ads): the rate
   * limit charges one token each (`rateLimit`), the first on arrival and the rest once it is done.
   */
  workUnits?: number;
  /** A conditional write's `If-Match`, read by the routes that take one (apiRoute's `entityTag`). */
  precondition?: Precondition;
}

export type AppEnv = { Bindings: Env; Variables: AppVariables };
