import type { MiddlewareHandler } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { log } from "../lib/log";
import { dispatchEvents } from "../services/events";
import { flushUpdateRequests } from "../services/publishing";

/**
 * After a successful write that may have asked for ad updates (image changes, manufacturer batches),
 * turn those requests into queued updates in the background; the cron does the same as a safety net.
 */
export const flushRequestedUpdates: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.req.method === "GET" || c.res.status !== 200) return;
  c.executionCtx.waitUntil(
    flushUpdateRequests(getDb(c.env.DB), c.env, 100, c.get("requestId")).catch((error) =>
      log("error", "queueing requested updates failed", { requestId: c.get("requestId"), error: String(error) }),
    ),
  );
};

/**
 * After every write: the events it wrote go to webhook delivery in the background, rather than at the
 * next cron run (which remains the safety net).
 */
export const dispatchAfterWrites: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.req.method === "GET" || c.res.status >= 500) return;
  c.executionCtx.waitUntil(
    dispatchEvents(getDb(c.env.DB), c.env, c.get("requestId")).catch((error) =>
      log("error", "webhook dispatch failed", { requestId: c.get("requestId"), error: String(error) }),
    ),
  );
};
