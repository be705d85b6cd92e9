import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list } from "../../lib/envelope";
import { rowId } from "../../lib/fields";
import { type ArchiveKind, ArchiveQuery, DeliveriesArchiveQuery, readArchive } from "../../services/archive";
import { Event, WebhookDelivery } from "../../services/events";
import { ImageStatus } from "../../services/images";
import { Job } from "../../services/publishing";
import { WalletEntry } from "../../services/wallet";
import { serviceContext } from "../context";
import { apiRoute, createRouter, listEnvelope } from "../openapi";

const tags = ["Archive"];

/** Each kind the archive holds, with its rows' shape (as the live list of the same rows shows them). */
const KINDS = {
  jobs: { item: Job, live: "GET /jobs/" },
  images: { item: ImageStatus, live: "GET /imagestatus/<userId>" },
  ledger: { item: WalletEntry, live: "GET /wallet/<userId>" },
  events: { item: Event, live: "GET /events/" },
  deliveries: {
    item: WebhookDelivery.extend({ webhookId: rowId() }).openapi("ArchivedWebhookDelivery"),
    live: "GET /webhooks/<webhookId>/deliveries",
  },
} as const satisfies Record<string, { item: z.ZodType; live: string }>;

const archiveRoute = <K extends keyof typeof KINDS>(kind: K) =>
  apiRoute({
    method: "get",
    path: `/archive/${kind}`,
    tags,
    summary: `A month's archived ${kind}, oldest first: the rows past their window in the database (${KINDS[kind].live} lists the rest)`,
    request: { query: kind === "deliveries" ? DeliveriesArchiveQuery : ArchiveQuery },
    response: listEnvelope(KINDS[kind].item),
  });

/** A page of the month's archived rows of `kind`. */
async function archivePage(
  c: Context<AppEnv>,
  kind: ArchiveKind,
  query: z.infer<typeof ArchiveQuery> | z.infer<typeof DeliveriesArchiveQuery>,
) {
  const startedAt = Date.now();
  return list(await readArchive(serviceContext(c), { kind, ...query }), startedAt);
}

export const archiveRouter = createRouter()
  .openapi(archiveRoute("jobs"), async (c) => c.json(await archivePage(c, "jobs", c.req.valid("query")), 200))
  .openapi(archiveRoute("images"), async (c) => c.json(await archivePage(c, "images", c.req.valid("query")), 200))
  .openapi(archiveRoute("ledger"), async (c) => c.json(await archivePage(c, "ledger", c.req.valid("query")), 200))
  .openapi(archiveRoute("events"), async (c) => c.json(await archivePage(c, "events", c.req.valid("query")), 200))
  .openapi(archiveRoute("deliveries"), async (c) =>
    c.json(await archivePage(c, "deliveries", c.req.valid("query")), 200),
  );
