import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { preconditionOf } from "../lib/entityTags";

/** A write that checks `If-Match` in its own batch (apiRoute's `entityTag`): the precondition for its services. */
export const takesIfMatch: MiddlewareHandler<AppEnv> = async (c, next) => {
  const ifMatch = c.req.header("If-Match");
  if (ifMatch !== undefined) c.set("precondition", preconditionOf(ifMatch));
  await next();
};
