import { and, eq, inArray, lte } from "drizzle-orm";
import { type Db, namedBatch, statementsOf } from "../../db/client";
import { inList } from "../../db/inList";
import { queueItems } from "../../db/schema";
import type { Env } from "../../env";
import { publishMessage, sendItems } from "./intents";
import { transition } from "./lifecycle";
import { runPublishJobs } from "./publishJobs";

/** A pending item this long past its expected delivery has lost its message. */
export const RESEND_AFTER_MS = 2 * 60_000;
/** A job runs for seconds; an item processing this long belongs to a consumer that died. */
export const STUCK_AFTER_MS = 5 * 60_000;

/**
 * Crash recovery: items whose message was lost (written, never sent, or sent and dropped) and items left
 * `processing` by a consumer that died are sent again. The consumer claims an item before it works on
 * it and every marketplace call is idempotent, so a message too many costs nothing.
 */
export async function resendStalledItems(db: Db, env: Env, now: Date, limit = 500): Promise<number> {
  const resendBefore = new Date(now.getTime() - RESEND_AFTER_MS).toISOString();
  const stuckBefore = new Date(now.getTime() - STUCK_AFTER_MS).toISOString();
  const { stalled, stuck } = await namedBatch(db, {
    stalled: db
      .select()
      .from(queueItems)
      .where(and(eq(queueItems.status, "pending"), lte(queueItems.retryAt, resendBefore)))
      .limit(limit),
    stuck: db
      .select()
      .from(queueItems)
      .where(and(eq(queueItems.status, "processing"), lte(queueItems.updatedAt, stuckBefore)))
      .limit(limit),
  });
  if (stalled.length + stuck.length === 0) return 0;
  const at = now.toISOString();
  // Stuck items go back to pending through the state machine (the consumer claims only pending items).
  await db.batch([
    db
      .update(queueItems)
      .set({ retryAt: at })
      .where(
        and(
          inList(
            queueItems.id,
            stalled.map((i) => i.id),
          ),
          eq(queueItems.status, "pending"),
        ),
      ),
    ...stuck.flatMap((item) =>
      statementsOf(
        transition(db, item, "retrying", { now: at, retryAt: at, reason: "the consumer stopped while working on it" }),
      ),
    ),
  ]);
  const items = [...stalled, ...stuck];
  await sendItems(
    env,
    items.map((item) => ({ item, requestId: item.requestId ?? undefined })),
  );
  return items.length;
}

/**
 * Items with no progress for a day are given up, settled as a dead letter is: what the marketplace holds
 * of their work succeeds, the rest fails with the reason and is refunded.
 */
export async function expireStaleItems(db: Db, env: Env, now: Date, limit = 100): Promise<number> {
  const stale = await db
    .select()
    .from(queueItems)
    .where(
      and(
        inArray(queueItems.status, ["pending", "processing"]),
        lte(queueItems.updatedAt, new Date(now.getTime() - 86_400_000).toISOString()),
      ),
    )
    .limit(limit);
  if (stale.length > 0)
    await runPublishJobs(
      env,
      stale.map((item) => publishMessage(item, item.requestId ?? undefined)),
      "expire",
    );
  return stale.length;
}
