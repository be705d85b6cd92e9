import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { parseBracketQuery } from "../lib/bracketQuery";

/**
 * Query strings use bracket notation (`order[0][field]=price`, `adId[]=1&adId[]=2`). Hono's query
 * validator reads `c.req.queries()`, a flat map of name → values; this replaces it for the request with
 * the nested parse, each value wrapped once so the validator unwraps it to the parsed value.
 */
export const bracketQuery: MiddlewareHandler<AppEnv> = async (c, next) => {
  const search = new URL(c.req.url).search.slice(1);
  if (search) {
    const parsed = parseBracketQuery(search);
    const wrapped = Object.fromEntries(Object.entries(parsed).map(([name, value]) => [name, [value]]));
    c.req.queries = (() => wrapped) as typeof c.req.queries;
  }
  await next();
};
