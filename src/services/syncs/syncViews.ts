// A sync and its report as the API shows them.
import { count, desc, eq } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { type SyncOutcome, syncs } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { formatDateTime } from "../../lib/time";
import { requireUser, seesUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { SyncView } from "./schemas";
import { CHUNK_ITEMS, getChunk, type ItemReport, plannedReport } from "./stockStore";

export type SyncRow = typeof syncs.$inferSelect;

/** What a step of a sync left: more steps, a wait for its ads' jobs (it runs again later), or nothing to do. */
export type StepOutcome = "more" | "waiting" | "done";

export const syncView = (row: SyncRow): SyncView => ({
  syncId: row.id,
  userId: row.userId,
  state: row.state,
  phase: row.phase,
  removal: row.removal,
  maxEndedPercent: row.maxEndedPercent,
  items: row.items,
  created: row.created,
  updated: row.updated,
  unchanged: row.unchanged,
  ended: row.ended,
  refused: row.refused,
  applied: Math.min(row.cursor, row.items),
  charged: row.charged,
  reason: row.reason,
  createdAt: formatDateTime(row.createdAt),
  finishedAt: row.finishedAt ? formatDateTime(row.finishedAt) : null,
});

/** `GET /syncs/<syncId>`: the sync, as its client (or an internal client) may see it. */
export async function getSync(ctx: ServiceContext, syncId: number): Promise<SyncView> {
  return syncView(await visibleSync(ctx, syncId));
}

async function visibleSync(ctx: ServiceContext, syncId: number): Promise<SyncRow> {
  const row = await ctx.db.select().from(syncs).where(eq(syncs.id, syncId)).get();
  if (!row || !(await seesUser(ctx.db, ctx.caller, row.userId)))
    throw DomainError.of("sync_not_found", `syncId: sync ${syncId} not found`);
  return row;
}

/** An item's report as the API shows it. */
const reportView = ({ planned: _planned, ...report }: ItemReport) => report;

/** Item `seq`'s report: as applied, or (not yet applied) the line with no outcome. */
async function chunkReports(bucket: R2Bucket, sync: SyncRow, chunk: number): Promise<ItemReport[]> {
  const reported = await getChunk(bucket, sync.id, "report", chunk);
  if (reported?.every((report) => report.outcome !== null)) return reported;
  const lines = (await getChunk(bucket, sync.id, "stock", chunk)) ?? [];
  return lines.map((line) => plannedReport(line, undefined, undefined));
}

/**
 * `GET /syncs/<syncId>/items`: the sync's report per item, in stock order, then the ads it ended; with
 * `outcome`, those of that outcome alone. A page reads the chunks it covers (with `outcome`, the chunks
 * up to its end).
 */
export async function listSyncItems(
  ctx: ServiceContext,
  input: { syncId: number; page: number; itemsPerPage: number; outcome?: SyncOutcome | undefined },
) {
  const sync = await visibleSync(ctx, input.syncId);
  const bucket = ctx.env.STOCKS;
  const from = (input.page - 1) * input.itemsPerPage;
  const to = from + input.itemsPerPage;
  const stockChunks = Math.ceil(sync.items / CHUNK_ITEMS);
  const chunks = [
    ...Array.from({ length: stockChunks }, (_, n) => () => chunkReports(bucket, sync, n)),
    ...Array.from(
      { length: sync.endChunks },
      (_, n) => async () => (await getChunk(bucket, sync.id, "ended", n)) ?? [],
    ),
  ];
  const totalItems = input.outcome ? sync[input.outcome] : sync.items + sync.ended;
  const items: ItemReport[] = [];
  let passed = 0;
  // Without a filter, each chunk but the last holds CHUNK_ITEMS: the page starts in a known chunk.
  let at = input.outcome ? 0 : Math.floor(from / CHUNK_ITEMS);
  passed = input.outcome ? 0 : at * CHUNK_ITEMS;
  for (; at < chunks.length && passed < to; at += 1) {
    const reports = await (chunks[at] as () => Promise<ItemReport[]>)();
    for (const report of reports) {
      if (input.outcome && report.outcome !== input.outcome) continue;
      if (passed >= from && passed < to) items.push(report);
      passed += 1;
    }
  }
  return { items: items.map(reportView), totalItems, page: input.page, itemsPerPage: input.itemsPerPage };
}

/** `GET /syncs/?userId=`: the user's syncs, newest first. */
export async function listSyncs(ctx: ServiceContext, input: { userId: number; page: number; itemsPerPage: number }) {
  await requireUser(ctx.db, ctx.caller, input.userId);
  const where = eq(syncs.userId, input.userId);
  const { total, rows } = await namedBatch(ctx.db, {
    total: ctx.db.select({ n: count() }).from(syncs).where(where),
    rows: ctx.db
      .select()
      .from(syncs)
      .where(where)
      .orderBy(desc(syncs.id))
      .limit(input.itemsPerPage)
      .offset((input.page - 1) * input.itemsPerPage),
  });
  return {
    items: rows.map(syncView),
    totalItems: total[0]?.n ?? 0,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
}
