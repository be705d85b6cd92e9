import { beforeAll, describe, expect, it } from "vitest";
import { call, defined, eventually, expectEnvelope, expectError, twoClients } from "../harness/api";
import { PAID_CATEGORY, requiredAttributes } from "../harness/data";
import { connectedSeller, listingsAtMarketplace, walletBalance } from "../harness/marketplace";

/**
 * A dealer's stock in one call (POST /syncs/): previewed and priced, applied in steps in the client's
 * lanes, free when nothing changed, ended items taken off and removed, and reported per item; checked
 * against what the marketplace simulator holds and what the ledger says.
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const item = (externalAdId: number, overrides: Record<string, unknown> = {}) => ({
  externalAdId,
  categoryId: PAID_CATEGORY,
  title: `Brommer ${externalAdId}`,
  description: "Een nette brommer, weinig gereden.",
  price: { model: "fixed", price: 100_000 + externalAdId },
  attributes: requiredAttributes(PAID_CATEGORY),
  targets: ["portal_a", "website"],
  ...overrides,
});

const ndjson = (items: unknown[]) => items.map((i) => JSON.stringify(i)).join("\n");

/** Sends a stock as NDJSON and answers the call's answer. */
const sendStock = (
  userId: number,
  items: unknown[],
  options: { query?: string; headers?: Record<string, string>; path?: string } = {},
) =>
  call("POST", `${options.path ?? "/syncs/"}?userId=${userId}${options.query ?? ""}`, {
    key,
    rawBody: ndjson(items),
    headers: { "Content-Type": "application/x-ndjson", ...options.headers },
  });

/** The sync once it is no longer running. */
const settledSync = (syncId: number) =>
  eventually(async () => {
    const answer = await call("GET", `/syncs/${syncId}`, { key });
    return answer.body.data.state === "running" ? undefined : answer.body.data;
  }, `sync ${syncId} to end`);

const reportOf = async (syncId: number) =>
  (await call("GET", `/syncs/${syncId}/items?itemsPerPage=1000`, { key })).body.data as {
    seq: number;
    externalAdId: number | null;
    outcome: string;
    adId: number | null;
    targets: { portal: string; action: string; jobId: number | null; refusal: { code: string } | null }[];
    errorDetails: { code: string; message: string }[];
  }[];

/** Every job of the user has ended (none pending or processing). */
const jobsSettled = (userId: number) =>
  eventually(async () => {
    const open = await call("GET", `/jobs/?userId=${userId}&state=pending&itemsPerPage=1`, { key });
    const running = await call("GET", `/jobs/?userId=${userId}&state=processing&itemsPerPage=1`, { key });
    return open.body.totalItems === 0 && running.body.totalItems === 0 ? true : undefined;
  }, `user ${userId}'s jobs to end`);

describe("a stock sync", () => {
  it("previews, applies as previewed, is free when nothing changed, and ends what the stock no longer holds", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const stock = Array.from({ length: 12 }, (_, i) => item(i + 1));
    const before = await walletBalance(key, userId);

    const preview = await sendStock(userId, stock, { path: "/syncs/preview" });
    expectEnvelope(preview, 200);
    expect(preview.body.data).toMatchObject({ items: 12, created: 12, updated: 0, unchanged: 0, ended: 0, refused: 0 });
    expect(preview.body.data.targets.portal_a.place).toBe(12);
    expect(preview.body.data.cost).toBeGreaterThan(0);

    const started = await sendStock(userId, stock);
    expectEnvelope(started, 200);
    const syncId = started.body.data.syncId as number;
    expect(started.headers.get("Location")).toBe(`/rest/v1/syncs/${syncId}`);
    const done = await settledSync(syncId);
    expect(done).toMatchObject({
      state: "finished",
      items: 12,
      created: 12,
      applied: 12,
      charged: preview.body.data.cost,
    });
    await jobsSettled(userId);
    expect(before - (await walletBalance(key, userId))).toBe(preview.body.data.cost);
    const online = async () => (await listingsAtMarketplace(key, userId)).filter((held) => held.online);
    expect((await online()).map((held) => held.title).sort()).toEqual(stock.map((it) => it.title).sort());
    const report = await reportOf(syncId);
    expect(report.map((r) => r.outcome)).toEqual(Array(12).fill("created"));
    expect(report.every((r) => r.targets.length === 2 && r.targets.every((t) => t.jobId !== null))).toBe(true);

    // The same stock again: nothing to do, nothing charged.
    const again = await sendStock(userId, stock);
    const unchanged = await settledSync(again.body.data.syncId);
    expect(unchanged).toMatchObject({ state: "finished", unchanged: 12, created: 0, updated: 0, charged: 0 });
    expect((await reportOf(unchanged.syncId)).every((r) => r.targets.length === 0)).toBe(true);

    // Two changed, one new, one gone.
    const next = [
      ...stock.slice(0, 11).map((it, i) => (i < 2 ? { ...it, price: { model: "fixed", price: 50_000 } } : it)),
      item(99),
    ];
    const plan = (await sendStock(userId, next, { path: "/syncs/preview" })).body.data;
    expect(plan).toMatchObject({ items: 12, created: 1, updated: 2, unchanged: 9, ended: 1 });
    const balance = await walletBalance(key, userId);
    const changed = await settledSync((await sendStock(userId, next)).body.data.syncId);
    expect(changed).toMatchObject({ created: 1, updated: 2, unchanged: 9, ended: 1, charged: plan.cost });
    await jobsSettled(userId);
    expect(balance - (await walletBalance(key, userId))).toBe(plan.cost);
    const held = await online();
    expect(held.map((h) => h.title).sort()).toEqual(next.map((it) => it.title).sort());
    expect(
      held
        .filter((h) => h.listing?.price.price === 50_000)
        .map((h) => h.title)
        .sort(),
    ).toEqual(["Brommer 1", "Brommer 2"]);
    const ended = (await reportOf(changed.syncId)).find((r) => r.outcome === "ended");
    expect(defined(ended).externalAdId).toBe(12);
    const ads = (await call("GET", `/ads/?userId=${userId}&simple=true&itemsPerPage=100`, { key })).body.data as {
      adId: number;
    }[];
    expect(ads).toHaveLength(12);
    expect(ads.map((ad) => ad.adId)).not.toContain(defined(ended).adId);
  });

  it("refuses a second sync of the user while one runs, and a stock that ends too much", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const first = await settledSync(
      (
        await sendStock(
          userId,
          Array.from({ length: 10 }, (_, i) => item(i + 1)),
        )
      ).body.data.syncId,
    );
    expect(first.state).toBe("finished");
    const halfWritten = await sendStock(userId, [item(1), item(2)]);
    expectError(halfWritten, "sync_would_end_too_many");
    expect(halfWritten.body.errorDetails?.[0]?.message).toContain("would end 8 of the user's 10 synced ads (80%)");
    const allowed = await sendStock(userId, [item(1), item(2)], { query: "&maxEndedPercent=80" });
    expectEnvelope(allowed, 200);
    const busy = await sendStock(userId, [item(1), item(2)], { query: "&maxEndedPercent=80" });
    expectError(busy, "sync_in_progress");
    const after = await settledSync(allowed.body.data.syncId);
    expect(after).toMatchObject({ state: "finished", ended: 8, unchanged: 2 });
  });

  it("reports each refused item with its field, and applies the rest", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const answer = await call("POST", `/syncs/?userId=${userId}`, {
      key,
      // Blank lines are no items, but the messages count them: a line is named where it was sent.
      rawBody: [
        "",
        JSON.stringify(item(1)),
        "",
        "{not json",
        JSON.stringify(item(2, { title: "x" })),
        JSON.stringify(item(1)),
      ].join("\n"),
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectEnvelope(answer, 200);
    const done = await settledSync(answer.body.data.syncId);
    expect(done).toMatchObject({ items: 4, created: 1, refused: 3 });
    const report = await reportOf(done.syncId);
    expect(report.map((r) => [r.seq, r.outcome, r.errorDetails[0]?.message])).toEqual([
      [1, "created", undefined],
      [2, "refused", "line 4: is not a JSON object"],
      [3, "refused", "title: must be 5-60 characters"],
      [4, "refused", "externalAdId: 1 is also the item on line 2"],
    ]);
    // Refused again, on its fields, the item names its ad; the dry run names the item.
    const adId = defined(report[0]?.adId);
    const bad = [JSON.stringify(item(1, { title: "x" }))].join("\n");
    const headers = { "Content-Type": "application/x-ndjson" };
    const preview = await call("POST", `/syncs/preview?userId=${userId}`, { key, rawBody: bad, headers });
    expect(preview.body.data.refusals).toMatchObject([{ seq: 1, externalAdId: 1 }]);
    const again = await call("POST", `/syncs/?userId=${userId}`, { key, rawBody: bad, headers });
    const refusedAgain = await reportOf((await settledSync(again.body.data.syncId)).syncId);
    expect(refusedAgain.map((r) => [r.outcome, r.externalAdId, r.adId])).toEqual([["refused", 1, adId]]);
  });

  it("replays a repeat with the same Idempotency-Key, and refuses the key with another stock, user or options", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const headers = { "Idempotency-Key": `sync-${userId}` };
    const first = await sendStock(userId, [item(1)], { headers });
    const repeat = await sendStock(userId, [item(1)], { headers });
    expectEnvelope(repeat, 200);
    expect(repeat.headers.get("Idempotent-Replayed")).toBe("true");
    expect(repeat.body.data.syncId).toBe(first.body.data.syncId);
    expectError(await sendStock(userId, [item(2)], { headers }), "idempotency_conflict");
    // The key names one request: the same stock for another user of the client, or with other options, is
    // another request (422), never a replay of the first user's sync.
    const other = await connectedSeller(key, internalKey, 10_000_000);
    expectError(await sendStock(other, [item(1)], { headers }), "idempotency_conflict");
    expectError(await sendStock(userId, [item(1)], { headers, query: "&removal=archive" }), "idempotency_conflict");
    expect((await call("GET", `/syncs/?userId=${other}`, { key })).body.totalItems).toBe(0);
    const done = await settledSync(first.body.data.syncId);
    expect(done.created).toBe(1);
    // The replay is the first answer, as it was.
    expect(repeat.body).toEqual(first.body);
  });

  it("syncs images by URL: stored once, left alone when unchanged, replaced when the list changes; and reports by events", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const imagesOf = async (adId: number) =>
      (await call("GET", `/imagestatus/${userId}/${adId}`, { key })).body.data as { jobId: number; done: boolean }[];
    const withImages = (images: string[]) => item(1, { images, targets: ["website"] });
    const first = await settledSync(
      (await sendStock(userId, [withImages(["http://images.test/red.png"])])).body.data.syncId,
    );
    const [created] = await reportOf(first.syncId);
    const adId = defined(created?.adId);
    const stored = await eventually(async () => {
      const jobs = await imagesOf(adId);
      return jobs.length === 1 && jobs.every((job) => job.done) ? jobs : undefined;
    }, "the item's image");
    const same = await settledSync(
      (await sendStock(userId, [withImages(["http://images.test/red.png"])])).body.data.syncId,
    );
    expect(same.unchanged).toBe(1);
    expect((await imagesOf(adId)).map((job) => job.jobId)).toEqual(stored.map((job) => job.jobId));
    const other = await settledSync(
      (await sendStock(userId, [withImages(["http://images.test/red.png", "http://images.test/green.png"])])).body.data
        .syncId,
    );
    expect(other.updated).toBe(1);
    await eventually(
      async () => ((await imagesOf(adId)).filter((job) => job.done).length === 3 ? true : undefined),
      "the new images",
    );
    // Each sync reported its start, its progress and its end.
    const events = (await call("GET", `/events/?after=0&userId=${userId}&limit=500`, { key })).body.data as {
      type: string;
      data: { syncId: number; state?: string };
    }[];
    const ofFirst = events.filter((event) => event.data.syncId === first.syncId).map((event) => event.type);
    expect(ofFirst).toEqual(["sync.started", "sync.progress", "sync.finished"]);
    expect(
      events.find((event) => event.type === "sync.finished" && event.data.syncId === other.syncId)?.data,
    ).toMatchObject({
      state: "finished",
      updated: 1,
    });
  });

  it("shows a sync to its own client only", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const started = await sendStock(userId, [item(1)]);
    const other = await twoClients();
    const syncId = started.body.data.syncId as number;
    expectError(await call("GET", `/syncs/${syncId}`, { key: other.key }), "sync_not_found");
    expectError(await call("GET", `/syncs/${syncId}/items`, { key: other.key }), "sync_not_found");
    expectError(await call("GET", `/syncs/?userId=${userId}`, { key: other.key }), "user_not_found");
    expectError(
      await call("POST", `/syncs/?userId=${userId}`, { key: other.key, body: { items: [item(2)] } }),
      "user_not_found",
    );
    await settledSync(syncId);
    const listed = await call("GET", `/syncs/?userId=${userId}`, { key });
    expect(listed.body.data.map((sync: { syncId: number }) => sync.syncId)).toEqual([syncId]);
  });

  it("requires its stock, as the document says: none is 400, another media type 415 naming both, a wrong JSON 400 naming the field", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    for (const path of ["/syncs/", "/syncs/preview"]) {
      const none = await call("POST", `${path}?userId=${userId}`, { key });
      expect(expectError(none, "validation_failed").map((d) => d.field)).toEqual(["body"]);
      const text = await call("POST", `${path}?userId=${userId}`, {
        key,
        rawBody: ndjson([item(1)]),
        headers: { "Content-Type": "text/plain" },
      });
      expect(expectError(text, "unsupported_media_type")[0]?.message).toBe(
        "body: Content-Type must be application/json or application/x-ndjson",
      );
      const wrong = await call("POST", `${path}?userId=${userId}`, { key, body: { items: {}, stock: [] } });
      expectEnvelope(wrong, 400, false);
      expect(wrong.body.errorDetails?.map((d) => `${d.code} ${d.field}`).sort()).toEqual([
        "unknown_field stock",
        "validation_failed items",
      ]);
    }
    // An empty stock said on purpose is a stock: nothing to create, and nothing held to end.
    expectEnvelope(await call("POST", `/syncs/preview?userId=${userId}`, { key, body: { items: [] } }), 200);
  });

  it("takes an NDJSON stock compressed (gzip, deflate), refuses another encoding 415, and a broken one 400", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const compressed = async (text: string, format: "gzip" | "deflate") =>
      new Uint8Array(
        await new Response(new Blob([text]).stream().pipeThrough(new CompressionStream(format))).arrayBuffer(),
      );
    const send = (body: BodyInit, headers: Record<string, string>) =>
      call("POST", `/syncs/?userId=${userId}`, {
        key,
        rawBody: body,
        headers: { "Content-Type": "application/x-ndjson", ...headers },
      });
    const stock = ndjson([item(1), item(2)]);
    const gzipped = await send(await compressed(stock, "gzip"), { "Content-Encoding": "gzip" });
    expectEnvelope(gzipped, 200);
    expect(await settledSync(gzipped.body.data.syncId)).toMatchObject({ state: "finished", items: 2, created: 2 });
    const deflated = await send(await compressed(stock, "deflate"), { "Content-Encoding": "deflate" });
    expect(await settledSync(deflated.body.data.syncId)).toMatchObject({ state: "finished", unchanged: 2 });
    expect(expectError(await send(stock, { "Content-Encoding": "br" }), "unsupported_media_type")[0]?.message).toBe(
      "body: Content-Encoding must be gzip, deflate or none (it is br)",
    );
    const json = await call("POST", `/syncs/?userId=${userId}`, {
      key,
      rawBody: await compressed(JSON.stringify({ items: [item(1)] }), "gzip"),
      headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" },
    });
    expectError(json, "unsupported_media_type");
    const broken = await send("not gzip at all", { "Content-Encoding": "gzip" });
    expect(expectError(broken, "malformed_body")[0]?.field).toBe("body");
  });

  it("previews a stock past 1 MiB sent as NDJSON, priced a rate-limit token per 50 items", async () => {
    const userId = await connectedSeller(key, internalKey, 10_000_000);
    const description = "Een nette brommer, weinig gereden, altijd binnen gestald en goed onderhouden. ".repeat(4);
    const stock = ndjson(Array.from({ length: 3_000 }, (_, i) => item(i + 1, { description, targets: [] })));
    expect(new TextEncoder().encode(stock).length).toBeGreaterThan(1024 * 1024);
    const preview = await call("POST", `/syncs/preview?userId=${userId}`, {
      key,
      rawBody: stock,
      headers: { "Content-Type": "application/x-ndjson" },
    });
    expectEnvelope(preview, 200);
    expect(preview.body.data).toMatchObject({ items: 3_000, created: 3_000, refused: 0 });
    expect(preview.headers.get("RateLimit-Cost")).toBe("60");
    // As JSON, the stock is a JSON body: 1 MiB at most.
    const json = await call("POST", `/syncs/preview?userId=${userId}`, {
      key,
      rawBody: JSON.stringify({ items: stock.split("\n").map((line) => JSON.parse(line)) }),
      headers: { "Content-Type": "application/json" },
    });
    expectError(json, "body_too_large");
  });
});
