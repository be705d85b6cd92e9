import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { adjustWallet, getWallet, Wallet, WalletAdjustment } from "../../services/wallet";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Wallet"];

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
        body: jsonBody(WalletAdjustment),
      },
      response: envelope(Wallet),
    }),
    async (c) => {
      return c.json(ok(await adjustWallet(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
