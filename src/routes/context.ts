import type { Context } from "hono";
import { getDb } from "../db/client";
import type { AppEnv } from "../env";
import { onlyReads } from "../lib/calls";
import { DomainError } from "../lib/errors";
import { mediaBaseOf } from "../lib/media";
import { requestShard } from "../middleware/d1Session";
import type { ServiceContext } from "../services/shared";
import { callerOf } from "../services/shared";

/**
 * What every handler hands to the services: the database, the bindings, the caller, the request id and,
 * for a write that takes one (`takesIfMatch`, apiRoute's `entityTag`), its precondition. A write that takes none refuses `If-Match`
 * rather than write unconditionally.
 */
export const serviceContext = (c: Context<AppEnv>): ServiceContext => {
  const precondition = c.get("precondition");
  if (!precondition && c.req.header("If-Match") !== undefined && !onlyReads(c.req.method, new URL(c.req.url).pathname))
    throw DomainError.of("validation_failed", "If-Match: this call takes no precondition (see docs/calling.md)");
  const env = requestShard(c);
  return {
    db: getDb(env.shard.d1),
    env,
    caller: callerOf(c.get("client")),
    mediaBase: mediaBaseOf(c.env, new URL(c.req.url).origin),
    requestId: c.get("requestId"),
    ...(precondition ? { precondition } : {}),
  };
};
