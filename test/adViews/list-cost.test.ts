// What a list costs in D1's billing unit (rows read), and the two things that keep it flat as the data
// grows: counts from maintained counters (tallies.test.ts) and cursors that seek instead of skipping rows.
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { meterSession } from "../../src/db/meter";
import { type Answer, call, d1RowsOf, defined, expectEnvelope, expectError, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { adBody, createAd, createUser, seedAds, seedJobs } from "../harness/data";
import { runPublishJob, withoutMessages } from "../harness/jobs";
import { connectedSeller, publicationOf } from "../harness/marketplace";

let key: string;
let internalKey: string;
beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const idsOf = (answer: Answer) => (answer.body.data as { adId: number }[]).map((ad) => ad.adId);

/** Every page of a list, followed by its cursors: each answer and the ids in the order they came. */
async function followCursors(query: string) {
  const pages: Answer[] = [];
  let cursor: string | undefined;
  do {
    const answer = await call("GET", `/ads/?${query}${cursor ? `&cursor=${cursor}` : ""}`, { key });
    expectEnvelope(answer, 200);
    pages.push(answer);
    cursor = answer.body.nextCursor as string | undefined;
  } while (cursor);
  return { pages, ids: pages.flatMap(idsOf) };
}

describe("rows read per request", () => {
  it("every answer reports the D1 rows its request read and wrote", async () => {
    const user = await createUser(key);
    // A user's view is a single select, which D1's raw() answers without meta: the meter still sees it.
    const read = await call("GET", `/users/${user.userId}`, { key });
    expectEnvelope(read, 200);
    expect(d1RowsOf(read).read).toBeGreaterThan(0);
    const created = await call("POST", "/ads/", { key, body: adBody(user.userId) });
    expectEnvelope(created, 200);
    expect(d1RowsOf(created).written).toBeGreaterThan(0);
    const refused = await call("DELETE", "/ads/999999999", { key });
    expectError(refused, "ad_not_found");
    expect(d1RowsOf(refused).written).toBe(0);
  });
});

describe("rows a publication costs", () => {
  it("a placement's request and its job read and write a bounded number of rows, however many jobs the shard holds (docs/capacity.md)", async () => {
    // Other users' ads and finished jobs on the shard: a placement of this user reads none of them.
    const other = (await createUser(key)).userId;
    await seedAds(other, 600);
    expect(await seedJobs(other)).toBe(600);
    const userId = await connectedSeller(key, internalKey, 100_000);
    const { adId } = await createAd(key, userId);
    const held = withoutMessages();
    const requested = await call("POST", "/publish/", { key, env: held, body: { userId, adId, portal: "portal_a" } });
    expectEnvelope(requested, 200);
    const itemId = Number(defined(requested.headers.get("Location")).split("/").at(-1));
    // The job as the consumer runs it, on a metered session of its own.
    const session = env.DB.withSession("first-primary");
    const job = meterSession(session);
    await runPublishJob(onTestShard(held, 1, session as unknown as D1Database), itemId);
    expect((await publicationOf(key, userId, adId))?.active).toBe(true);
    // What docs/capacity.md assumes per placement; a change that multiplies the rows fails here.
    expect(d1RowsOf(requested).read, "rows the request read").toBeLessThan(150);
    expect(d1RowsOf(requested).written, "rows the request wrote").toBeLessThan(30);
    expect(job.rowsRead, "rows the job read").toBeLessThan(150);
    expect(job.rowsWritten, "rows the job wrote").toBeLessThan(40);
  });
});

describe("cursors", () => {
  let userId: number;
  const total = 300;
  beforeAll(async () => {
    userId = (await createUser(key)).userId;
    await seedAds(userId, total);
  });

  it("walk the whole list once, in order, as pages do; the last page has none", async () => {
    const { pages, ids } = await followCursors(`userId=${userId}&simple=true&itemsPerPage=40`);
    const byPages: number[] = [];
    for (let page = 1; page <= Math.ceil(total / 40); page += 1) {
      byPages.push(
        ...idsOf(await call("GET", `/ads/?userId=${userId}&simple=true&itemsPerPage=40&page=${page}`, { key })),
      );
    }
    expect(ids).toEqual(byPages);
    expect(ids).toHaveLength(total);
    expect(pages.map((p) => p.body.page)).toEqual(pages.map((_, i) => i + 1));
    expect(pages.every((p) => p.body.totalItems === total)).toBe(true);
  });

  it("read about what they show at any depth, where an offset page reads what it skips", async () => {
    const query = `userId=${userId}&simple=true&itemsPerPage=25`;
    await call("GET", `/ads/?${query}`, { key }); // the catalogue, cached per isolate, is read once
    const { pages } = await followCursors(query);
    const deepest = defined(pages.at(-2));
    // The page's ads and their (absent) details, the caller's key, user and one counter row.
    expect(d1RowsOf(deepest).read).toBeLessThanOrEqual(4 * 25 + 20);
    const offsetPage = await call("GET", `/ads/?${query}&page=${pages.length - 1}`, { key });
    expect(idsOf(offsetPage)).toEqual(idsOf(deepest));
    expect(d1RowsOf(offsetPage).read).toBeGreaterThan(d1RowsOf(deepest).read + 200);
  });

  it("seek backwards in descending order, and within a status filter", async () => {
    const expected = (
      await env.DB.prepare("SELECT id FROM ads WHERE user_id = ? AND status = 'active' ORDER BY id DESC")
        .bind(userId)
        .all<{ id: number }>()
    ).results.map((row) => row.id);
    const { ids } = await followCursors(
      `userId=${userId}&status=active&simple=true&itemsPerPage=30&order[0][field]=created&order[0][descending]=true`,
    );
    expect(ids).toEqual(expected);
  });

  it("of an order by another key carry the page: they offset, and still walk the list", async () => {
    const query = `userId=${userId}&simple=true&itemsPerPage=50&order[0][field]=price&order[0][descending]=true`;
    const { ids } = await followCursors(query);
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
  });

  it("are refused, naming the field, when forged or sent with another order", async () => {
    const forged = await call("GET", `/ads/?userId=${userId}&cursor=not-a-cursor`, { key });
    expectError(forged, "validation_failed");
    expect(forged.body.errors).toEqual(["cursor: is not a cursor this API handed out"]);
    const first = await call("GET", `/ads/?userId=${userId}&simple=true`, { key });
    const cursor = defined(first.body.nextCursor as string | undefined, "nextCursor");
    const reordered = await call("GET", `/ads/?userId=${userId}&order[0][field]=price&cursor=${cursor}`, { key });
    expectError(reordered, "validation_failed");
    expect(reordered.body.errors).toEqual(["cursor: was handed out for another order; start again without it"]);
  });
});
