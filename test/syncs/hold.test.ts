import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { DomainError } from "../../src/lib/errors";
import { callerOf, type ServiceContext } from "../../src/services/shared";
import { type StockLine, SyncItem, startSync } from "../../src/services/syncs";
import { call, newClient } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createUser, PAID_CATEGORY } from "../harness/data";
import { withoutMessages } from "../harness/jobs";

/**
 * One sync of a user at a time, from the first byte of its stock until it ends, however long the upload:
 * on a clock the test runs (an upload of minutes in a moment), a sync renews its hold as its stock arrives;
 * one whose stock stopped arriving for ten minutes loses it to the next, and then applies nothing.
 */

let ctx: ServiceContext;
let key: string;

beforeAll(async () => {
  const partner = await newClient({ partner: true });
  key = partner.key;
  ctx = {
    db: getDb(env.DB),
    env: onTestShard(withoutMessages()),
    caller: callerOf({ id: partner.client.id, internal: false, partner: true }),
    mediaBase: "/media/",
  };
});

const line = (seq: number): StockLine => ({
  seq,
  line: seq,
  item: SyncItem.parse({
    externalAdId: seq,
    categoryId: PAID_CATEGORY,
    title: `Brommer ${seq}`,
    description: "Een nette brommer, weinig gereden.",
    price: { model: "fixed", price: 100_000 },
    targets: [],
  }),
});

/** A stock whose lines arrive one a second on `clock`, with `meanwhile` run before line `at`. */
function slowStock(clock: { now: number }, lines: number, at: number, meanwhile: () => Promise<void>) {
  return {
    lines: (async function* () {
      for (let seq = 1; seq <= lines; seq += 1) {
        if (seq === at) await meanwhile();
        clock.now += 1000;
        yield line(seq);
      }
    })(),
    digest: async () => `stock-of-${lines}`,
  };
}

let lapsedDetails: unknown;
const codeOf = async (work: Promise<unknown>) => {
  try {
    await work;
    return "started";
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    lapsedDetails = error.details;
    return error.code;
  }
};

const stateOf = async (syncId: number) =>
  (await env.DB.prepare("SELECT state FROM syncs WHERE id = ?").bind(syncId).first<{ state: string }>())?.state;

const optionsOf = (userId: number) => ({ userId, removal: "delete" as const, maxEndedPercent: 100 });

describe("a sync's hold on its user", () => {
  it("lasts as long as its stock arrives: 11 minutes in, a second sync of the user is refused", async () => {
    const options = optionsOf((await createUser(key)).userId);
    const clock = { now: Date.parse("2026-11-28T10:00:00Z") };
    let second = "";
    const stock = slowStock(clock, 700, 660, async () => {
      const other = { lines: (async function* () {})(), digest: async () => "empty" };
      second = await codeOf(
        startSync(ctx, { options, idempotencyKey: undefined, stock: other, clock: () => clock.now }),
      );
    });
    const { sync } = await startSync(ctx, { options, idempotencyKey: undefined, stock, clock: () => clock.now });
    expect(second).toBe("sync_in_progress");
    expect(sync).toMatchObject({ state: "running", items: 700 });
  });

  it("is lost by a stock that stopped arriving for 10 minutes: the next sync runs, the first applies nothing", async () => {
    const userId = (await createUser(key)).userId;
    const options = optionsOf(userId);
    const clock = { now: Date.parse("2026-11-29T10:00:00Z") };
    let second: { syncId: number } | undefined;
    const stock = slowStock(clock, 60, 11, async () => {
      clock.now += 11 * 60_000;
      const other = { lines: (async function* () {})(), digest: async () => "empty" };
      ({ sync: second } = await startSync(ctx, {
        options,
        idempotencyKey: undefined,
        stock: other,
        clock: () => clock.now,
      }));
    });
    const first = await codeOf(startSync(ctx, { options, idempotencyKey: undefined, stock, clock: () => clock.now }));
    expect(first).toBe("sync_lapsed");
    expect(lapsedDetails).toMatchObject([{ code: "sync_lapsed", field: "syncId" }]);
    expect(await stateOf(second?.syncId ?? 0)).toBe("running");
    const [lost] = (
      await env.DB.prepare("SELECT id, state FROM syncs WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT 1")
        .bind(userId, second?.syncId ?? 0)
        .all<{ id: number; state: string }>()
    ).results;
    expect(lost?.state).toBe("failed");
    const started = await env.DB.prepare(
      "SELECT count(*) AS n FROM events WHERE type = 'sync.started' AND json_extract(data, '$.syncId') = ?",
    )
      .bind(lost?.id ?? 0)
      .first<{ n: number }>();
    expect(started?.n).toBe(0);
  });

  it("ends an upload that sends nothing for SYNC_UPLOAD_STALL_SECONDS: 408, the sync failed, nothing applied", async () => {
    const userId = (await createUser(key)).userId;
    const encoder = new TextEncoder();
    let sent = false;
    const stalling = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent) return new Promise<void>(() => {}); // and then nothing, ever
        sent = true;
        controller.enqueue(encoder.encode(`${[1, 2, 3].map((n) => JSON.stringify(line(n).item)).join("\n")}\n`));
      },
    });
    const answer = await call("POST", `/syncs/?userId=${userId}`, {
      key,
      rawBody: stalling,
      headers: { "Content-Type": "application/x-ndjson" },
      env: { ...env, SYNC_UPLOAD_STALL_SECONDS: "1" } as never,
    });
    expect(answer.status).toBe(408);
    expect(answer.body.errorDetails).toMatchObject([{ code: "upload_stalled", field: "body" }]);
    const [sync] = (
      await env.DB.prepare("SELECT state, reason FROM syncs WHERE user_id = ?")
        .bind(userId)
        .all<{ state: string; reason: string }>()
    ).results;
    expect(sync?.state).toBe("failed");
    expect(sync?.reason).toMatch(/nothing arrived for 1 s/);
    const ads = await env.DB.prepare("SELECT count(*) AS n FROM ads WHERE user_id = ?")
      .bind(userId)
      .first<{ n: number }>();
    expect(ads?.n).toBe(0);
    // The user's turn is free again: the stock sent whole is taken.
    const again = await call("POST", `/syncs/?userId=${userId}`, { key, body: { items: [line(1).item] } });
    expect(again.status).toBe(200);
  });
});
