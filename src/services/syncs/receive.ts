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

/**
 * `POST /syncs/`: takes a user's stock and starts applying it. The stock is stored as it arrives (a
 * chunk of lines per D1 batch: never held whole), each line checked on its own (a refused line is
 * reported and the rest goes on). Then, unless the stock would end more of the user's synced ads than
 * `maxEndedPercent` allows (refused whole: 409 `sync_would_end_too_many`), the sync runs in steps in
 * the client's lanes. One sync of a user at a time (409 `sync_in_progress`). An Idempotency-Key makes a
 * repeat with the same stock answer the sync it started (`replayed`), and one with another stock 422.
 */
export async function startSync(
  ctx: ServiceContext,
  input: {
    options: SyncOptions;
    idempotencyKey: string | undefined;
    stock: Stock;
    /** The clock of the hold on the user (tests run an upload of hours in a moment). */
    clock?: () => number;
  },
): Promise<{ sync: SyncView; replayed: boolean }> {
  const clock = input.clock ?? Date.now;
  const at = () => new Date(clock()).toISOString();
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  await requireUser(db, caller, userId);
  const clientId = clientIdOf(caller);
  if (input.idempotencyKey !== undefined) {
    const earlier = await db
      .select()
      .from(syncs)
      .where(and(eq(syncs.clientId, clientId), eq(syncs.idempotencyKey, input.idempotencyKey)))
      .get();
    if (earlier) return { sync: await replayOf(input, earlier), replayed: true };
  }
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
  } catch (error) {
    await db
      .update(syncs)
      .set({ state: "failed", reason: `the stock could not be read: ${failureText(error)}`, updatedAt: at() })
      .where(and(eq(syncs.id, syncId), eq(syncs.state, "receiving")));
    await deleteStock(bucket, syncId);
    throw error;
  }
  const digest = await input.stock.digest();
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
  return { sync: startedView(row), replayed: false };
}

/**
 * A repeat of a sync's Idempotency-Key: the same request (user, options and stock) answers that sync (or
 * its refusal); another request, another user's stock included, 422.
 */
async function replayOf(
  request: { options: SyncOptions; stock: Stock },
  earlier: typeof syncs.$inferSelect,
): Promise<SyncView> {
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
async function claimUserTurn(
  ctx: ServiceContext,
  input: { options: SyncOptions; idempotencyKey: string | undefined; clock: () => number },
): Promise<number> {
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
