// POST /syncs/: a stock received as it arrives, the user held for one sync at a time, then applied in steps.
import { and, eq, sql } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { syncs } from "../../db/schema";
import { failureText } from "../../db/triggers";
import { DomainError, detail } from "../../lib/errors";
import { eventOf } from "../events/events";
import { clientIdOf, isInternal, isPartner, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { endingOf, endingRefusal } from "./endingGuard";
import type { SyncOptions, SyncView } from "./schemas";
import { sendSyncStep } from "./steps";
import { chunksOf, type Stock, storedLines, withoutRepeats } from "./stockLines";
import { deleteStock, putChunk, putStockKeys } from "./stockStore";
import { syncView } from "./syncViews";

/** A sync whose stock sent nothing for this long lost its upload: it no longer holds its user's turn. */
const RECEIVE_LAPSE_MS = 10 * 60_000;
/** How often a sync receiving its stock renews its hold on the user (its row's time), as the stock arrives. */
const HOLD_RENEW_MS = 60_000;

/** What a stock's upload or fetch sends to a sync: its options, its lines and the clock of the hold. */
interface Receiving {
  options: SyncOptions;
  idempotencyKey?: string | undefined;
  stock: Stock;
  /** The clock of the hold on the user (tests run an upload of hours in a moment). */
  clock?: () => number;
}

/**
 * `POST /syncs/`: takes a user's stock and starts applying it. The stock is stored as it arrives (a
 * chunk of lines per D1 batch: never held whole), each line checked on its own (a refused line is
 * reported and the rest goes on). Then, unless the stock would end more of the user's synced ads than
 * `maxEndedPercent` allows (refused whole: 409 `sync_would_end_too_many`), the sync runs in steps in
 * the client's lanes. One sync of a user at a time (409 `sync_in_progress`). An Idempotency-Key makes a
 * repeat with the same stock answer the sync it started (`replayed`), and one with another stock 422.
 */
export async function startSync(ctx: ServiceContext, input: Receiving): Promise<{ sync: SyncView; replayed: boolean }> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.options.userId);
  if (input.idempotencyKey !== undefined) {
    const earlier = await db
      .select()
      .from(syncs)
      .where(and(eq(syncs.clientId, clientIdOf(caller)), eq(syncs.idempotencyKey, input.idempotencyKey)))
      .get();
    if (earlier) return { sync: await replayOf(input, earlier), replayed: true };
  }
  const received = await receivedStock(ctx, input);
  return { sync: await begun(ctx, input, received), replayed: false };
}

/**
 * A feed's stock (src/services/feeds/): a sync as `POST /syncs/` starts one, unless its bytes are those of
 * the stock `lastDigest` is of: then no sync (the row that held the user's turn while the stock arrived is
 * dropped with what it stored), and `sync` is null. Answers the items and the digest either way.
 */
export async function syncIfChanged(
  ctx: ServiceContext,
  input: Receiving & { lastDigest: string | null },
): Promise<{ sync: SyncView | null; items: number; digest: string }> {
  await requireUser(ctx.db, ctx.caller, input.options.userId);
  const received = await receivedStock(ctx, input);
  if (received.digest === input.lastDigest) {
    await deleteStock(ctx.env.STOCKS, received.syncId);
    await ctx.db.delete(syncs).where(and(eq(syncs.id, received.syncId), eq(syncs.state, "receiving")));
    return { sync: null, items: received.items, digest: received.digest };
  }
  return { sync: await begun(ctx, input, received), items: received.items, digest: received.digest };
}

/** A stock received whole: the sync that holds the user's turn, its items, their keys and the bytes' digest. */
interface ReceivedStock {
  syncId: number;
  items: number;
  inStock: Set<number>;
  digest: string;
}

/**
 * The user's turn taken (the sync's row, `receiving`) and the stock stored as it arrives, the hold renewed
 * meanwhile. A stock that cannot be read fails the sync, whose stored chunks are dropped.
 */
async function receivedStock(ctx: ServiceContext, input: Receiving): Promise<ReceivedStock> {
  const clock = input.clock ?? Date.now;
  const at = () => new Date(clock()).toISOString();
  const { db } = ctx;
  const syncId = await claimUserTurn(ctx, { ...input, clock });
  const { STOCKS: bucket } = ctx.env;
  // The hold on the user, renewed as the stock arrives: a sync that lost it (its stock stopped arriving
  // and another sync took the turn) stops, and applies nothing.
  let renewedAt = clock();
  const stillHeld = async (): Promise<void> => {
    if (clock() - renewedAt < HOLD_RENEW_MS) return;
    const held = await db
      .update(syncs)
      .set({ updatedAt: at() })
      .where(and(eq(syncs.id, syncId), eq(syncs.state, "receiving")))
      .returning({ id: syncs.id });
    if (held.length === 0) throw lapsed(syncId);
    renewedAt = clock();
  };
  const seen = new Map<number, number>();
  const inStock = new Set<number>();
  let items = 0;
  try {
    let chunk = 0;
    for await (const lines of chunksOf(input.stock.lines)) {
      const stored = await storedLines(withoutRepeats(lines, seen));
      for (const line of stored) if (line.externalAdId !== null) inStock.add(line.externalAdId);
      await putChunk(bucket, syncId, "stock", chunk, stored);
      await stillHeld();
      chunk += 1;
      items = lines.at(-1)?.seq ?? items;
    }
    await putStockKeys(bucket, syncId, inStock);
    return { syncId, items, inStock, digest: await input.stock.digest() };
  } catch (error) {
    await db
      .update(syncs)
      .set({ state: "failed", reason: `the stock could not be read: ${failureText(error)}`, updatedAt: at() })
      .where(and(eq(syncs.id, syncId), eq(syncs.state, "receiving")));
    await deleteStock(bucket, syncId);
    throw error;
  }
}

/**
 * A received stock's sync started, unless it would end more of the user's synced ads than its options
 * allow (refused: 409 `sync_would_end_too_many`) or it lost its turn meanwhile: running, with its first
 * step in the client's lanes.
 */
async function begun(ctx: ServiceContext, input: Receiving, received: ReceivedStock): Promise<SyncView> {
  const at = () => new Date((input.clock ?? Date.now)()).toISOString();
  const { db } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  const { syncId, items, inStock, digest } = received;
  const { STOCKS: bucket } = ctx.env;
  const { ended, synced } = await endingOf(db, { userId, removal, inStock });
  const refusal = endingRefusal(ended.length, synced, maxEndedPercent);
  const { sync } = await namedBatch(db, {
    sync: db
      .update(syncs)
      .set({
        state: refusal ? "refused" : "running",
        items,
        digest,
        reason: refusal?.message ?? null,
        updatedAt: at(),
      })
      // Only a sync that still holds its user: one that lost the turn meanwhile applies nothing.
      .where(and(eq(syncs.id, syncId), eq(syncs.state, "receiving")))
      .returning(),
    started: refusal
      ? []
      : [
          eventOf(
            db,
            { type: "sync.started", userId, data: sql`json_object('syncId', ${syncId}, 'items', ${items})` },
            sql`EXISTS (SELECT 1 FROM ${syncs} WHERE ${syncs.id} = ${syncId} AND ${syncs.state} = 'running')`,
          ),
        ],
  });
  const [row] = sync;
  if (!row) {
    await deleteStock(bucket, syncId);
    throw lapsed(syncId);
  }
  if (refusal) {
    await deleteStock(bucket, syncId);
    throw new DomainError(refusal);
  }
  await sendSyncStep(ctx.env, { syncId, requestId: ctx.requestId });
  return startedView(row);
}

/**
 * A repeat of a sync's Idempotency-Key: the same request (user, options and stock) answers that sync (or
 * its refusal); another request, another user's stock included, 422.
 */
async function replayOf(request: Receiving, earlier: typeof syncs.$inferSelect): Promise<SyncView> {
  for await (const _line of request.stock.lines) {
    // Read to the end: the digest is of the whole stock.
  }
  if (earlier.state === "receiving")
    throw new DomainError(
      detail("idempotency_in_progress", "Idempotency-Key: a request with this key is still running"),
      { retryAfterSeconds: 1 },
    );
  const { userId, removal, maxEndedPercent } = request.options;
  const same =
    earlier.userId === userId &&
    earlier.removal === removal &&
    earlier.maxEndedPercent === maxEndedPercent &&
    (await request.stock.digest()) === earlier.digest;
  if (!same) throw DomainError.of("idempotency_conflict", "Idempotency-Key: was used with a different request");
  if (earlier.state === "refused" && earlier.reason)
    throw new DomainError(detail("sync_would_end_too_many", earlier.reason));
  return startedView(earlier);
}

/** The sync as its first answer showed it, just started: what a repeat of its Idempotency-Key answers again. */
const startedView = (row: typeof syncs.$inferSelect): SyncView =>
  syncView({
    ...row,
    state: "running",
    phase: "items",
    cursor: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    ended: 0,
    refused: 0,
    charged: 0,
    reason: null,
    finishedAt: null,
  });

/**
 * The sync's row, as the user's one sync under way (a unique index holds it). A sync that stopped
 * receiving its stock long ago (its upload died) gives up its turn; another under way refuses this one.
 */
async function claimUserTurn(ctx: ServiceContext, input: Receiving & { clock: () => number }): Promise<number> {
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  const insert = () =>
    db
      .insert(syncs)
      .values({
        id: nextId(syncs, groupOfUser(userId)),
        clientId: clientIdOf(caller),
        internal: isInternal(caller),
        partner: isPartner(caller),
        userId,
        removal,
        maxEndedPercent,
        idempotencyKey: input.idempotencyKey ?? null,
        mediaBase: ctx.mediaBase,
        createdAt: new Date(input.clock()).toISOString(),
        updatedAt: new Date(input.clock()).toISOString(),
      })
      .returning({ id: syncs.id })
      .get();
  for (let attempt = 0; ; attempt += 1) {
    try {
      const row = await insert();
      if (row) return row.id;
    } catch (error) {
      if (!failureText(error).includes("UNIQUE")) throw error;
    }
    const running = await db
      .select({ id: syncs.id, state: syncs.state, updatedAt: syncs.updatedAt, key: syncs.idempotencyKey })
      .from(syncs)
      .where(and(eq(syncs.userId, userId), sql`${syncs.state} IN ('receiving', 'running')`))
      .get();
    const lapse = new Date(input.clock() - RECEIVE_LAPSE_MS).toISOString();
    if (running?.state === "receiving" && running.updatedAt < lapse && attempt === 0) {
      await db
        .update(syncs)
        .set({
          state: "failed",
          reason: "its stock stopped arriving before the last line",
          updatedAt: new Date(input.clock()).toISOString(),
        })
        .where(and(eq(syncs.id, running.id), eq(syncs.state, "receiving")));
      continue;
    }
    if (running)
      throw new DomainError(
        detail(
          "sync_in_progress",
          `userId: sync ${running.id} of user ${userId} is still under way; wait for it (GET /syncs/${running.id})`,
        ),
        { retryAfterSeconds: 10 },
      );
    // Another request with this Idempotency-Key took it between the read and the insert.
    throw new DomainError(
      detail("idempotency_in_progress", "Idempotency-Key: a request with this key is still running"),
      { retryAfterSeconds: 1 },
    );
  }
}

/** A sync that lost its hold on the user while its stock arrived: it ended, nothing of it applied. */
const lapsed = (syncId: number) =>
  DomainError.of(
    "sync_lapsed",
    `syncId: sync ${syncId} lost its turn: its stock sent nothing for ${RECEIVE_LAPSE_MS / 60_000} minutes and another sync of the user started; nothing of it was applied, send the stock again`,
  );
