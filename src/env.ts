import type { Precondition } from "./lib/entityTags";

/** The shards' database bindings (DB, DB_2, …; src/db/shards.ts). */
type ShardBinding = Extract<keyof Cloudflare.Env, "DB" | `DB_${number}`>;

/**
 * Bindings, vars and secrets, as `wrangler types` generates them from wrangler.toml and .dev.vars into
 * worker-configuration.d.ts (`npm run types`; `npm test` fails when that file is stale), but the shards'
 * databases: no code reads "the current database". A shard is reached through a resolver that names it
 * and why (src/db/shards.ts), so work that assumes one does not compile.
 */
export type Env = Omit<Cloudflare.Env, ShardBinding>;

/** Why work runs on a shard: what named it (src/db/shards.ts `onShard`). */
export type ShardReason =
  | "the caller's client"
  | "the ids the request names"
  | "the rows its message names"
  | "the group's"
  | "every shard in turn"
  | "the shard's own cron"
  | "the user the consent's state names";

/** A shard as work on it knows it. */
export interface NamedShard {
  /** 1 is `DB`, n is `DB_n`. */
  readonly number: number;
  readonly why: ShardReason;
  /** Its database (a request's D1 session), whose inserts lease id blocks from the directory. */
  readonly d1: D1Database;
}

/** Work on one shard: the bindings with that shard named (src/db/shards.ts `onShard`). */
export interface ShardEnv extends Env {
  readonly shard: NamedShard;
}

/** Rows D1 read and wrote for one request, summed over every call its session made (src/db/meter.ts). */
export interface D1Usage {
  rowsRead: number;
  rowsWritten: number;
}

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
  /** The request's shard, with its D1 session (set by the d1Session middleware; read by `requestShard`). */
  shardEnv?: ShardEnv;
  /** An internal client's request that names no row: its lists span every shard (src/routes/acrossShards.ts). */
  spansShards?: boolean;
  /** What the request's D1 session read and wrote (set by the d1Session middleware). */
  d1Usage?: D1Usage;
  /** The request's D1 session (set by the d1Session middleware; `backgroundShard` goes on from its bookmark). */
  d1Session?: D1DatabaseSession;
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
