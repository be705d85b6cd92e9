import { z } from "@hono/zod-openapi";
import { id, rowId } from "../../lib/fields";

export const WalletAdjustment = z
  .object({
    userId: id(),
    amount: z
      .number()
      .int()
      .min(-100_000_000)
      .max(100_000_000)
      .refine((v) => v !== 0, { error: "must not be 0" })
      .openapi({ not: { const: 0 }, description: "Cents: a credit (positive) or a debit (negative), never 0" }),
    description: z.string().min(1).max(255),
  })
  .openapi("WalletAdjustment");

/** One ledger entry, as the wallet and the archive show it. */
export const WalletEntry = z
  .object({
    entryId: rowId(),
    amount: z.number().int(),
    kind: z.enum(["credit", "debit", "charge", "refund"]),
    description: z.string(),
    adId: rowId().nullable(),
    portal: z.string().nullable(),
    created: z.string(),
  })
  .openapi("WalletEntry");

/** A wallet's response shape. */
export const Wallet = z
  .object({
    userId: rowId(),
    balance: z.number().int().openapi({ description: "Cents" }),
    entries: z.array(WalletEntry),
  })
  .openapi("Wallet");
