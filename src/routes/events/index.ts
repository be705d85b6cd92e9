import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { shardNumbers } from "../../db/shards";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { requestShard } from "../../middleware/d1Session";
import { Event, EventsQuery, type EventType, readEvents } from "../../services/events";
import { contextOnShard } from "../acrossShards";
import { serviceContext } from "../context";
import { apiRoute, createRouter } from "../openapi";

/**
 * Whose feed a request reads: the request's shard (its client's, or a named user's), or, for an internal
 * client, the shard it names with `shard`.
 */
async function feedContext(c: Context<AppEnv>, query: { shard?: number | undefined; userId?: number | undefined }) {
  if (query.shard === undefined || query.userId !== undefined) return serviceContext(c);
  if (!c.var.client.internal) throw DomainError.of("internal_only", "shard: may only be set by internal clients");
  return contextOnShard(c, query.shard);
}

export const eventsRouter = createRouter().openapi(
  apiRoute({
    method: "get",
    path: "/events",
    tags: ["Events"],
    summary: "The event feed: what happened to your users' ads, images, bids, tasks and wallets, oldest first",
    description:
      "Read from `after=0` and ask again with the answered `cursor`: every event arrives once, in order. Events are kept 30 days.",
    request: { query: EventsQuery },
    response: z.object({
      result: z.boolean(),
      errors: z.array(z.string()),
      data: z.array(Event),
      cursor: z.number().int().openapi({ description: "Pass as `after` to read on" }),
      shard: z.number().int().optional().openapi({ description: "Internal clients: the shard whose feed this is" }),
      shards: z
        .array(z.number().int())
        .optional()
        .openapi({ description: "Internal clients: every shard, each a feed of its own (`shard`)" }),
    }),
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { events, cursor } = await readEvents(await feedContext(c, query), {
      after: query.after ?? 0,
      types: query.type as EventType[] | undefined,
      userId: query.userId,
      limit: query.limit ?? 100,
    });
    const internal = c.var.client.internal;
    const here = requestShard(c).shard.number;
    const shard = query.userId === undefined ? (query.shard ?? here) : here;
    return c.json({ ...ok(events), cursor, ...(internal && { shard, shards: shardNumbers(c.env) }) }, 200);
  },
);
