// The Worker as `npm run bench` runs it: the development Worker plus one route only the benchmark has.
// GET /rest/v1/bench/ceiling?rows=N&page=P is the local ceiling of any page of N ads that needs D1: one
// bare query of N ad rows (page P in creation order) behind the same authentication, rate limit and D1
// session as every API route, in the envelope.
import { app } from "../src/app";
import { ok } from "../src/lib/envelope";
import { requestShard } from "../src/middleware/d1Session";

// Every Durable Object class of the Worker, and its handlers.
export * from "../src/index";
export { default } from "../src/index";

app.get("/rest/v1/bench/ceiling", async (c) => {
  const rows = Number(c.req.query("rows"));
  const page = Number(c.req.query("page"));
  const { results } = await requestShard(c)
    .shard.d1.prepare("SELECT * FROM ads ORDER BY id LIMIT ? OFFSET ?")
    .bind(rows, (page - 1) * rows)
    .all();
  return c.json(ok(results));
});
