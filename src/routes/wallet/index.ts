import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { id, pathId } from "../../lib/fields";
import { adjustWallet, getWallet } from "../../services/wallet";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Wallet"];
const Wallet = z
  .object({
    userId: z.number().int(),
    balance: z.number().int().openapi({ description: "Cents" }),
    entries: z.array(
      z.object({
        entryId: z.number().int(),
        amount: z.number().int(),
        kind: z.enum(["credit", "debit", "charge", "refund"]),
        description: z.string(),
        adId: z.number().int().nullable(),
        portal: z.string().nullable(),
        created: z.string(),
      }),
    ),
  })
  .openapi("Wallet");

export const walletRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/wallet/{userId}",
      tags,
      summary: "The user's balance and latest 100 ledger entries",
      request: { params: z.object({ userId: pathId("userId") }) },
      response: envelope(Wallet),
    }),
    async (c) => {
      return c.json(ok(await getWallet(serviceContext(c), c.req.valid("param").userId)), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/wallet",
      tags,
      summary: "Credit (positive amount) or debit (negative) a wallet; internal clients only",
      request: {
        body: jsonBody(
          z
            .object({
              userId: id(),
              amount: z
                .number()
                .int()
                .min(-100_000_000)
                .max(100_000_000)
                .refine((v) => v !== 0, { error: "must not be 0" }),
              description: z.string().min(1).max(255),
            })
            .openapi("WalletAdjustment"),
        ),
      },
      response: envelope(Wallet),
    }),
    async (c) => {
      return c.json(ok(await adjustWallet(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
