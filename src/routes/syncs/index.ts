import { BASE_PATH, NDJSON } from "../../lib/calls";
import { list, ok } from "../../lib/envelope";
import { priceByWork } from "../../middleware/rateLimit";
import {
  CHUNK_ITEMS,
  getSync,
  listSyncItems,
  listSyncs,
  previewSync,
  Sync,
  SyncIdParam,
  SyncItemReport,
  SyncItemsQuery,
  SyncOptions,
  SyncPlan,
  SyncsQuery,
  startSync,
} from "../../services/syncs";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, listEnvelope } from "../openapi";
import { stockOf } from "./stock";

const tags = ["Syncs"];

/**
 * A stock: `{items: [...]}` as JSON (up to 1 MiB), or NDJSON, one item a line (up to SYNC_MAX_ITEMS items),
 * streamed. Required, as the route requires it; the route reads it itself (`stockOf`), so the document
 * names the JSON's schema and the NDJSON as bytes a generated client can send.
 */
const stockBody = {
  required: true,
  description:
    'The user\'s whole stock (an empty one is `{"items": []}`). As JSON, `{items: [...]}` (the 1 MiB limit of every JSON body); as NDJSON (`Content-Type: application/x-ndjson`), one `SyncItem` a line, read as it arrives, up to 20,000 items.',
  content: {
    "application/json": { schema: { $ref: "#/components/schemas/SyncStock" } },
    [NDJSON]: { schema: { type: "string" as const, format: "binary", description: "One SyncItem (JSON) per line" } },
  },
};

const syncPath = (syncId: number) => `${BASE_PATH}/syncs/${syncId}`;

export const syncsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/syncs/preview",
      tags,
      summary:
        "Dry run of POST /syncs/: the plan (created, updated, unchanged, ended and refused items), priced per target; changes nothing",
      request: { query: SyncOptions, body: stockBody },
      response: envelope(SyncPlan),
    }),
    async (c) => {
      const plan = await previewSync(serviceContext(c), { options: c.req.valid("query"), stock: await stockOf(c) });
      // Priced by its work, as every dry run: a token per step's worth of items (CHUNK_ITEMS).
      priceByWork(c, Math.ceil(plan.items / CHUNK_ITEMS));
      return c.json(ok(plan), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/syncs",
      tags,
      summary:
        "Sync a user's whole stock: new items created, changed ones updated, unchanged ones left alone (free), gone ones ended; each placed on, updated at or taken off its targets. Runs in steps; follow it at GET /syncs/<syncId>",
      request: { query: SyncOptions, body: stockBody },
      response: envelope(Sync),
      headers: { Location: { description: "The sync: GET it to follow it", schema: { type: "string" } } },
    }),
    async (c) => {
      const { sync, replayed } = await startSync(serviceContext(c), {
        options: c.req.valid("query"),
        idempotencyKey: c.req.header("Idempotency-Key"),
        stock: await stockOf(c),
      });
      c.header("Location", syncPath(sync.syncId));
      if (replayed) c.header("Idempotent-Replayed", "true");
      return c.json(ok(sync), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/syncs",
      tags,
      summary: "A user's syncs, newest first",
      request: { query: SyncsQuery },
      response: listEnvelope(Sync),
    }),
    async (c) => {
      const startedAt = Date.now();
      return c.json(list(await listSyncs(serviceContext(c), c.req.valid("query")), startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/syncs/{syncId}",
      tags,
      summary: "A sync: its state, phase and counts",
      request: { params: SyncIdParam },
      response: envelope(Sync),
    }),
    async (c) => c.json(ok(await getSync(serviceContext(c), c.req.valid("param").syncId)), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/syncs/{syncId}/items",
      tags,
      summary:
        "A sync's report per item, in stock order (the ads it ended after the stock): outcome, ad, each target's job or refusal, and why an item was refused",
      request: { params: SyncIdParam, query: SyncItemsQuery },
      response: listEnvelope(SyncItemReport),
    }),
    async (c) => {
      const startedAt = Date.now();
      const page = await listSyncItems(serviceContext(c), { ...c.req.valid("param"), ...c.req.valid("query") });
      return c.json(list(page, startedAt), 200);
    },
  );
