import type { MiddlewareHandler } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { log } from "../lib/log";
import { flushUpdateRequests } from "../services/publishing";
import { dispatchEvents } from "../services/webhooks";

/**
 * After a successful write: the ad updates it may have asked for (image changes, manufacturer batches)
 * become queued updates, and the events it wrote go to webhook delivery, in the background; the cron
 * does both as a safety net.
 */
export const flushRequestedUpdates: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.req.method === "GET" || c.res.status !== 200) return;
  c.executionCtx.waitUntil(
    flushUpdateRequests(getDb(c.env.DB), c.env, 100, c.get("requestId"))
      .then(() => dispatchEvents(getDb(c.env.DB), c.env, c.get("requestId")))
      .catch((error) =>
        log("error", "background work after a write failed", { requestId: c.get("requestId"), error: String(error) }),
      ),
  );
};
