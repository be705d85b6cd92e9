import { desc, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { notifications, userSettings, walletEntries } from "../../db/schema";
import { formatDateTime } from "../../lib/time";
import { eventOf } from "../events/events";
import { requireInternal, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";

/** Whose wallet pays for a user's actions: its walletUserId when set, otherwise the user itself. */
export const payerIdOf = (userId: number, walletUserId: number | null | undefined) => walletUserId ?? userId;

/** `payerIdOf` with the user's settings read. */
export const balanceQuery = (db: Db, userId: number) =>
  db
    .select({ balance: sql<number>`coalesce(sum(${walletEntries.amount}), 0)` })
    .from(walletEntries)
    .where(eq(walletEntries.userId, userId));

export async function balanceOf(db: Db, userId: number): Promise<number> {
  return (await balanceQuery(db, userId).get())?.balance ?? 0;
}

/** A ledger entry as GET /wallet/ shows it (and the archive keeps it). */
export const entryView = (row: typeof walletEntries.$inferSelect) => ({
  entryId: row.id,
  amount: row.amount,
  kind: row.kind,
  description: row.description,
  adId: row.adId,
  portal: row.portal,
  created: formatDateTime(row.createdAt),
});

export async function getWallet(ctx: ServiceContext, userId: number) {
  const { db, caller } = ctx;
  await requireUser(db, caller, userId);
  const {
    balance: [balance],
    entries,
  } = await namedBatch(db, {
    balance: balanceQuery(db, userId),
    entries: db
      .select()
      .from(walletEntries)
      .where(eq(walletEntries.userId, userId))
      .orderBy(desc(walletEntries.id))
      .limit(100),
  });
  return { userId, balance: balance?.balance ?? 0, entries: entries.map(entryView) };
}

/** POST /wallet/ (internal clients): a positive amount credits, a negative one debits. */
export async function adjustWallet(
  ctx: ServiceContext,
  input: { userId: number; amount: number; description: string },
) {
  const { db, caller } = ctx;
  requireInternal(caller, "wallet");
  await requireUser(db, caller, input.userId);
  await db.insert(walletEntries).values({
    id: nextId(walletEntries, groupOfUser(input.userId)),
    userId: input.userId,
    amount: input.amount,
    kind: input.amount >= 0 ? "credit" : "debit",
    description: input.description,
  });
  return getWallet(ctx, input.userId);
}

/**
 * After a charge: when it took the payer's balance from at or above `budgetNotifyLimit` to below it,
 * one notice is written to the outbox (and logged). Below the limit already, no new notice.
 */
export async function noteBudgetCrossing(db: Db, payerId: number, charged: number): Promise<void> {
  const [settings, after] = await Promise.all([
    db
      .select({ limit: userSettings.budgetNotifyLimit })
      .from(userSettings)
      .where(eq(userSettings.userId, payerId))
      .get(),
    balanceOf(db, payerId),
  ]);
  const limit = settings?.limit ?? 0;
  if (limit <= 0 || after >= limit || after + charged < limit) return;
  const message = `balance ${after} cents is below the notification limit of ${limit} cents`;
  await db.batch([
    db
      .insert(notifications)
      .values({ id: nextId(notifications, groupOfUser(payerId)), userId: payerId, kind: "budget", message }),
    eventOf(db, {
      type: "wallet.below_limit",
      userId: payerId,
      data: sql`json_object('balance', ${after}, 'limit', ${limit})`,
    }),
  ]);
  console.log(JSON.stringify({ level: "info", msg: "budget notice", userId: payerId, balance: after, limit }));
}
