/** Wallet entries. */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./accounts";
import { createdAt } from "./shared";

/** Append-only wallet ledger in cents; a balance is the sum of a payer's entries. */
export const walletEntries = sqliteTable(
  "wallet_entries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    amount: integer("amount").notNull(),
    kind: text("kind", { enum: ["credit", "debit", "charge", "refund"] }).notNull(),
    description: text("description").notNull(),
    adId: integer("ad_id"),
    portal: text("portal"),
    queueItemId: integer("queue_item_id"),
    createdAt: createdAt(),
  },
  (t) => [
    index("wallet_entries_user").on(t.userId),
    uniqueIndex("wallet_entries_refund_once").on(t.queueItemId, t.kind),
  ],
);
