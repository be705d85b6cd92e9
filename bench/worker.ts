// The Worker as `npm run bench` runs it: the development Worker plus one route only the benchmark has.
// GET /rest/v1/bench/ceiling?rows=N&page=P is the local ceiling of any page of N ads that needs D1: one
// bare query of N ad rows (page P in creation order) behind the same authentication, rate limit and D1
// session as every API route, in the envelope. POST /rest/v1/bench/archive?month=M&rows=N writes N ledger
// rows of the calling client into its archive month M, as the cron's runs of 1,000 do.
import { sql } from "drizzle-orm";
import { app } from "../src/app";
import { getDb } from "../src/db/client";
import { ok } from "../src/lib/envelope";
import { requestShard } from "../src/middleware/d1Session";
import { groupOfClientColumn, writeArchive } from "../src/services/archive/archive";

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

app.post("/rest/v1/bench/archive", async (c) => {
  const month = c.req.query("month") ?? "2024-01";
  const rows = Number(c.req.query("rows"));
  const clientId = c.get("client")?.id ?? 0;
  const { shard } = requestShard(c);
  const [group] = await getDb(shard.d1)
    .select({ id: groupOfClientColumn(sql`${clientId}`) })
    .from(sql`(SELECT 1)`);
  for (let written = 0; written < rows; written += 1000) {
    const ids = Array.from({ length: Math.min(1000, rows - written) }, (_, at) => 8_000_000_000 + written + at);
    await writeArchive(
      c.env.ARCHIVE,
      "ledger",
      ids.map((id) => ({
        id,
        groupId: group?.id ?? 1,
        clientId,
        userId: 1,
        at: `${month}-10T08:00:00.000Z`,
        row: { entryId: id, userId: 1, amount: 100, kind: "credit", description: `entry ${id}` },
      })),
    );
  }
  return c.json(ok({ rows }));
});
