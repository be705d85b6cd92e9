import type { Context } from "hono";
import { getDb } from "../db/client";
import { onShard, shardNumbers } from "../db/shards";
import type { AppEnv } from "../env";
import type { Page } from "../lib/envelope";
import { DomainError } from "../lib/errors";
import type { ServiceContext } from "../services/shared";
import { serviceContext } from "./context";

/** Seconds a caller waits before asking again for a list a shard did not answer. */
const SHARD_RETRY_SECONDS = 5;

/**
 * Runs a read on every shard an internal client's list spans (`spansShards`: it names no row), side by
 * side, or on the request's own shard only; one answer per shard. A shard other than the request's is
 * read without a session. A shard that does not answer fails the call with 503 `shard_unavailable`:
 * never a short list.
 */
export async function onEveryShard<T>(
  c: Context<AppEnv>,
  read: (ctx: ServiceContext, at: number) => Promise<T>,
): Promise<T[]> {
  const here = serviceContext(c);
  if (!c.var.spansShards) return [await read(here, 0)];
  return Promise.all(
    shardNumbers(c.env).map(async (shard, at) => {
      if (shard === here.env.shard.number) return read(here, at);
      try {
        return await read(contextOnShard(c, shard), at);
      } catch (error) {
        if (error instanceof DomainError) throw error;
        throw new DomainError(
          {
            code: "shard_unavailable",
            message: `shard ${shard} did not answer; the list would be short, so try again`,
          },
          { retryAfterSeconds: SHARD_RETRY_SECONDS },
        );
      }
    }),
  );
}

/** The request's service context on another shard (read without a session); 400 for a shard that does not exist. */
export function contextOnShard(c: Context<AppEnv>, shard: number): ServiceContext {
  const here = serviceContext(c);
  if (shard === here.env.shard.number) return here;
  const shards = shardNumbers(c.env);
  if (!shards.includes(shard))
    throw DomainError.of("validation_failed", `shard: there is no shard ${shard}; the shards are ${shards.join(", ")}`);
  const env = onShard(c.env, shard, "every shard in turn");
  return { ...here, env, db: getDb(env.shard.d1) };
}

type Paging = { page: number; itemsPerPage: number };

/**
 * A list in pages ordered by id (ids are unique across shards), on every shard it spans: each shard
 * answers its first `page × itemsPerPage` rows, one query each, and the page is their merge in the
 * list's order, the total their sum. A deeper page costs more rows, as with any list merged from many
 * databases; a list by user (`userId`) is one shard's.
 */
export async function pageOfEveryShard<T, Q extends Paging>(
  c: Context<AppEnv>,
  query: Q,
  list: (ctx: ServiceContext, query: Q) => Promise<Page<T>>,
  order: { idOf: (item: T) => number; descending: boolean },
): Promise<Page<T>> {
  if (!c.var.spansShards) return list(serviceContext(c), query);
  const window = { ...query, page: 1, itemsPerPage: query.page * query.itemsPerPage };
  const pages = await onEveryShard(c, (ctx) => list(ctx, window));
  const sign = order.descending ? -1 : 1;
  const merged = pages
    .flatMap((page) => page.items)
    .sort((a, b) => sign * (order.idOf(a) - order.idOf(b)))
    .slice((query.page - 1) * query.itemsPerPage, query.page * query.itemsPerPage);
  return {
    items: merged,
    totalItems: pages.reduce((sum, page) => sum + page.totalItems, 0),
    page: query.page,
    itemsPerPage: query.itemsPerPage,
  };
}
