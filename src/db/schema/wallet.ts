/** Wallet entries. */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { users } from "./accounts";
import { byId, group, owners, USER_PARENT } from "./ownership";
import { createdAt } from "./shared";

/**
 * Append-only wallet ledger in cents; a balance is the sum of a payer's entries. Entries past their window
 * go to the archive (src/services/archive), their sum kept in the payer's one brought-forward entry.
 */
export const walletEntries = sqliteTable(
  "wallet_entries",
  {
    // The rowid, not AUTOINCREMENT (no id counter written per entry): ids come from the group's blocks.
    id: integer("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    amount: integer("amount").notNull(),
    kind: text("kind", { enum: ["credit", "debit", "charge", "refund"] }).notNull(),
    description: text("description").notNull(),
    adId: integer("ad_id"),
    portal: text("portal"),
    queueItemId: integer("queue_item_id"),
    /** The payer's one entry that carries the sum of its archived entries (the balance stays exact). */
    broughtForward: integer("brought_forward", { mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    index("wallet_entries_user").on(t.userId),
    // A job's refund, at most one; a charge needs no entry here (it is made with its job, once).
    uniqueIndex("wallet_entries_refund_once").on(t.queueItemId).where(sql`${t.kind} = 'refund'`),
  ],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const walletOwners = owners([[walletEntries, group(byId("wallet_entries"), { parents: USER_PARENT })]]);
