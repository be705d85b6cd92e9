// A running sync's steps as its client's lanes run them: the stock's chunks applied (applyItems.ts), then
// the ads it no longer holds ended (endAds.ts); the sync finished or failed; old syncs purged.
import { and, eq, lt, sql } from "drizzle-orm";
import { syncs } from "../../db/schema";
import type { ShardEnv } from "../../env";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/time";
import { eventOf } from "../events/events";
import { requireUser } from "../shared/access";
import { actingFor, type JobContext } from "../shared/context";
import { applyItems } from "./applyItems";
import { ENDING_WAIT_SECONDS, endAds } from "./endAds";
import { deleteStock } from "./stockStore";
import type { SyncRow } from "./syncViews";

/** How long a finished sync, its stock and its report are kept. */
export const SYNC_RETENTION_MS = 30 * 86_400_000;

/** Queues a sync's next step: a lane job of its client (`ClientLanes`), which runs it within the client's share. */
export async function sendSyncStep(
  env: ShardEnv,
  input: { syncId: number; requestId?: string | undefined; delaySeconds?: number },
) {
  await env.JOBS.send(
    { kind: "sync", syncId: input.syncId, requestId: input.requestId },
    input.delaySeconds ? { delaySeconds: input.delaySeconds } : undefined,
  );
}

/**
 * One step of a running sync (a lane job): the stock's next chunk applied (CHUNK_ITEMS items), or, once
 * every chunk is, the next chunk of ads it ends; then the next step is queued (later, when the ads it ends
 * wait for their jobs), or the sync finishes. A
 * step that dies is run again (the lanes keep the job) from the sync's row, which moves only when a
 * chunk's report is stored: each item is planned afresh from what is stored, so what the dead step did is
 * found done (the ad by its externalAdId, a placement by the one open job per listing) and not done twice,
 * and the report says what the dead step planned.
 */
export async function runSyncStep(ctx: JobContext, input: { syncId: number }): Promise<void> {
  const sync = await ctx.db.select().from(syncs).where(eq(syncs.id, input.syncId)).get();
  if (sync?.state !== "running") return;
  // The sync's client as the caller: its tenancy kept with the sync.
  const work = actingFor(ctx, sync);
  try {
    await requireUser(ctx.db, work.caller, sync.userId);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return finish(ctx, sync, "failed", "the user is no longer there");
  }
  const outcome = sync.phase === "items" ? await applyItems(work, sync) : await endAds(work, sync);
  if (outcome === "done") await finish(ctx, sync, "finished", null);
  else
    await sendSyncStep(ctx.env, {
      syncId: sync.id,
      requestId: ctx.requestId,
      ...(outcome === "waiting" ? { delaySeconds: ENDING_WAIT_SECONDS } : {}),
    });
}

/** Ends a sync that could not finish (its job gave up): failed, with the reason. */
export async function failSync(ctx: JobContext, input: { syncId: number; reason: string }): Promise<void> {
  const sync = await ctx.db.select().from(syncs).where(eq(syncs.id, input.syncId)).get();
  if (sync?.state === "running") await finish(ctx, sync, "failed", input.reason);
}

async function finish(ctx: JobContext, sync: SyncRow, state: "finished" | "failed", reason: string | null) {
  const { db } = ctx;
  await db.batch([
    db
      .update(syncs)
      .set({ state, phase: "done", reason, updatedAt: nowIso(), finishedAt: nowIso() })
      .where(and(eq(syncs.id, sync.id), eq(syncs.state, "running"))),
    eventOf(db, {
      type: "sync.finished",
      userId: sync.userId,
      data: sql`(SELECT json_object('syncId', id, 'state', ${state}, 'items', items, 'created', created, 'updated', updated,
        'unchanged', unchanged, 'ended', ended, 'refused', refused, 'charged', charged) FROM ${syncs} WHERE id = ${sync.id})`,
    }),
  ]);
}

/** The syncs that ended more than SYNC_RETENTION_MS ago: their stock and report, then their row. Answers how many. */
export async function purgeOldSyncs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const before = new Date(ctx.now.getTime() - SYNC_RETENTION_MS).toISOString();
  const old = await ctx.db.select({ id: syncs.id }).from(syncs).where(lt(syncs.updatedAt, before)).limit(input.limit);
  for (const { id } of old) {
    await deleteStock(ctx.env.STOCKS, id);
    await ctx.db.delete(syncs).where(eq(syncs.id, id));
  }
  return old.length;
}
