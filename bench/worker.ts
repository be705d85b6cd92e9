// The Worker as `npm run bench` runs it: the development Worker plus one route only the benchmark has.
// GET /rest/v1/bench/ceiling is the local ceiling of any page that needs D1: one bare query of 25 ad
// rows behind the same authentication, rate limit and D1 session as every API route, in the envelope.
import { app } from "../src/app";
import { ok } from "../src/lib/envelope";

export { default, MarketplaceSimulator, RateLimiter, UserTokens } from "../src/index";

app.get("/rest/v1/bench/ceiling", async (c) => {
  const { results } = await c.env.DB.prepare("SELECT * FROM ads ORDER BY id LIMIT 25 OFFSET 975").all();
  return c.json(ok(results));
});
