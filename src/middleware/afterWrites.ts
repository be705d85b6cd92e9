import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { log } from "../lib/log";
import { dispatchEvents } from "../services/events";
import { flushUpdateRequests } from "../services/publishing";
import { jobContext } from "../services/shared";
import { backgroundShard } from "./d1Session";

/**
 * After a successful write that may have asked for ad updates (image changes, manufacturer batches),
 * turn those requests into queued updates in the background; the cron does the same as a safety net.
 */
export const flushRequestedUpdates: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.req.method === "GET" || c.res.status !== 200) return;
  c.executionCtx.waitUntil(
    flushUpdateRequests(jobContext(backgroundShard(c), c.get("requestId")), { limit: 100 }).catch((error) =>
      log("error", "queueing requested updates failed", { requestId: c.get("requestId"), error: String(error) }),
    ),
  );
};

/**
 * After every write that succeeded: the events it wrote go to webhook delivery in the background, rather
 * than at the next cron run (which remains the safety net). Only the writer's own endpoints are looked
 * at (an internal client writes for every client, so all of them); a refused write does no webhook work.
 */
export const dispatchAfterWrites: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.req.method === "GET" || c.res.status >= 300) return;
  const client = c.get("client");
  const scope = { requestId: c.get("requestId"), clientId: client?.internal ? undefined : client?.id };
  c.executionCtx.waitUntil(
    dispatchEvents(jobContext(backgroundShard(c)), scope).catch((error) =>
      log("error", "webhook dispatch failed", { requestId: c.get("requestId"), error: String(error) }),
    ),
  );
};
