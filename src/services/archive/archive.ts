/**
 * The archive: rows of the tables that grow with time leave D1 past their hot window and are kept in R2
 * (`ARCHIVE`), as NDJSON per client group, month and kind, each line the row as the API shows it with
 * whose it is. So a shard's size in steady state is its live ads and a window of each log, and a client
 * still reads its history (GET /archive/). An object is written before its rows are deleted, under a key
 * named by the first and last id it holds: a run that dies between the two writes its rows again.
 */
import { and, asc, eq, inArray, lt, notExists, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { d1Statement, namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import {
  adImages,
  adPublications,
  apiClients,
  events,
  imageJobs,
  publishJobs,
  users,
  walletEntries,
  webhookDeliveries,
  webhookEndpoints,
} from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { formatDateTime } from "../../lib/time";
import { EVENT_RETENTION_MS, eventView, pastRetention } from "../events/events";
import { deliveryView } from "../events/webhooks";
import { toImageStatus } from "../images/images";
import { jobColumns, jobView } from "../publishing/jobs/view";
import { clientIdOf, requireUserHistory } from "../shared/access";
import type { JobContext, ServiceContext } from "../shared/context";
import { entryView } from "../wallet/wallet";
import { type ArchiveLine, type ArchiveOwner, archiveObject, archivePage, indexObject } from "./pages";

/** Days a row stays in D1 after it was written; events and deliveries keep EVENT_RETENTION_MS (30 days). */
export const HOT_WINDOW_DAYS = { jobs: 90, ledger: 90, images: 90 } as const;

/** What the archive holds, by kind: each is a folder of a group's month. */
export type ArchiveKind = "jobs" | "images" | "ledger" | "events" | "deliveries";

/** One archived row: whose it is (a line's client and user) and what the API showed of it. */
export interface ArchivedRow {
  id: number;
  groupId: number;
  clientId: number | null;
  userId: number | null;
  /** When the row was written, as stored (its month names the object). */
  at: string;
  row: Record<string, unknown>;
}

const DAY_MS = 86_400_000;

/** The stored instant `days` before the context's clock. */
export const windowStart = (now: Date, days: number) => new Date(now.getTime() - days * DAY_MS).toISOString();

/** The folder of a group's month: `archive/<groupId>/<YYYY-MM>/`. */
export const monthFolder = (groupId: number, month: string) => `archive/${groupId}/${month}/`;

/** The group of a client's rows, on the shard (its copy of the directory's clients). */
export const groupOfClientColumn = (clientId: SQLWrapper): SQL<number> =>
  sql<number>`coalesce((SELECT ${apiClients.groupId} FROM ${apiClients} WHERE ${apiClients.id} = ${clientId}), 1)`;

/**
 * Writes rows into the archive: per group, month and kind, one NDJSON object per client of the rows (in its
 * folder: `archivePage` reads a client's, and a user's within it), named by its first and last id and its
 * number of rows, its users' counts in its metadata, then named in the folder's index. Lines are
 * `{"id":…,"clientId":…,"userId":…,"row":{…}}`, in id order. A run that died after writing may be followed by one that picks a different set of rows (a
 * row became due meanwhile): the same row can then be in two objects, and the reader counts it once.
 */
export async function writeArchive(bucket: R2Bucket, kind: ArchiveKind, rows: ArchivedRow[]): Promise<void> {
  const objects = new Map<string, { folder: string; clientId: number; lines: ArchiveLine[] }>();
  for (const { id, clientId, userId, row, groupId, at } of rows) {
    const folder = `${monthFolder(groupId, at.slice(0, 7))}${kind}/`;
    // A user's row without a client (none is made so now) goes under client 0.
    const object = objects.get(`${folder}${clientId ?? 0}`) ?? { folder, clientId: clientId ?? 0, lines: [] };
    object.lines.push({ id, clientId, userId, row });
    objects.set(`${folder}${clientId ?? 0}`, object);
  }
  await Promise.all(
    [...objects.values()].map(async ({ folder, clientId, lines }) => {
      const { key, body, users } = archiveObject(folder, clientId, lines);
      await bucket.put(key, body, { httpMetadata: { contentType: "application/x-ndjson" }, customMetadata: { users } });
      await indexObject(bucket, folder, clientId, key);
    }),
  );
}

/** A user's row's client and group, read beside it (joined to its user). */
const ownerOfUserRow = { clientId: users.clientId, groupId: groupOfClientColumn(users.clientId) };

/** Whose a user's row is, and when it was written, for its archive line. */
const userRowOf = (
  row: { id: number; userId: number; createdAt: string },
  clientId: number | null,
  groupId: number,
) => ({
  id: row.id,
  groupId,
  clientId,
  userId: row.userId,
  at: row.createdAt,
});

/**
 * Writes rows to the archive, then takes them out of D1 (`remove`, given their ids): answers how many. A
 * run that dies between the two writes the same objects again next time.
 */
async function moveToArchive(
  bucket: R2Bucket,
  kind: ArchiveKind,
  rows: ArchivedRow[],
  remove: (ids: number[]) => Promise<unknown>,
): Promise<number> {
  if (rows.length === 0) return 0;
  await writeArchive(bucket, kind, rows);
  await remove(rows.map((row) => row.id));
  return rows.length;
}

/**
 * Cron: finished jobs past their window leave D1 for the archive, at most `limit` a run, oldest first.
 * The latest job of a publication stays (its status names it), whatever its age.
 */
export async function archiveJobs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env, now } = ctx;
  const rows = await db
    .select({ ...jobColumns, job: publishJobs, ...ownerOfUserRow })
    .from(publishJobs)
    .innerJoin(users, eq(users.id, publishJobs.userId))
    .where(
      and(
        inArray(publishJobs.status, ["done", "error", "cancelled"]),
        lt(publishJobs.createdAt, windowStart(now, HOT_WINDOW_DAYS.jobs)),
        notExists(
          db.select({ one: sql`1` }).from(adPublications).where(eq(adPublications.queueItemId, publishJobs.id)),
        ),
      ),
    )
    .orderBy(asc(publishJobs.id))
    .limit(input.limit);
  return moveToArchive(
    env.ARCHIVE,
    "jobs",
    rows.map(({ job, refunded, laterJob, clientId, groupId }) => ({
      ...userRowOf(job, clientId, groupId),
      row: jobView({ ...job, refunded, laterJob }),
    })),
    (ids) => db.delete(publishJobs).where(inList(publishJobs.id, ids)),
  );
}

/**
 * Cron: finished image jobs past their window whose image is not on its ad (failed, cancelled, or
 * replaced since) leave D1 for the archive, at most `limit` a run, oldest first. The job of an image the
 * ad shows stays while it does (the image names it).
 */
export async function archiveImageJobs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env, now } = ctx;
  const rows = await db
    .select({ job: imageJobs, ...ownerOfUserRow })
    .from(imageJobs)
    .innerJoin(users, eq(users.id, imageJobs.userId))
    .where(
      and(
        eq(imageJobs.done, true),
        lt(imageJobs.createdAt, windowStart(now, HOT_WINDOW_DAYS.images)),
        notExists(db.select({ one: sql`1` }).from(adImages).where(eq(adImages.jobId, imageJobs.id))),
      ),
    )
    .orderBy(asc(imageJobs.id))
    .limit(input.limit);
  return moveToArchive(
    env.ARCHIVE,
    "images",
    rows.map(({ job, clientId, groupId }) => ({ ...userRowOf(job, clientId, groupId), row: toImageStatus(job) })),
    (ids) => db.delete(imageJobs).where(inList(imageJobs.id, ids)),
  );
}

/**
 * The statements that move a payer's archived entries into its one brought-forward entry, made when it
 * has none: its amount grows by exactly their sum in the batch that deletes them, so the balance (the sum
 * of the entries) does not change by a cent.
 */
function bringForward(d1: D1Database, userId: number, ids: number[], through: string): D1PreparedStatement[] {
  const archived = inList(walletEntries.id, ids);
  const carried = sql`user_id = ${userId} AND brought_forward = 1`;
  const archivedSum = sql`(SELECT coalesce(sum(amount), 0) FROM wallet_entries WHERE ${archived})`;
  const description = `Balance brought forward: the entries up to ${through} are in the archive (GET /archive/)`;
  return [
    sql`INSERT INTO wallet_entries (id, user_id, amount, kind, description, brought_forward)
      SELECT ${nextId(walletEntries, groupOfUser(userId))}, ${userId}, 0, 'credit', ${description}, 1
      WHERE NOT EXISTS (SELECT 1 FROM wallet_entries WHERE ${carried})`,
    sql`UPDATE wallet_entries SET amount = amount + ${archivedSum}, description = ${description},
      kind = CASE WHEN amount + ${archivedSum} >= 0 THEN 'credit' ELSE 'debit' END
      WHERE ${carried}`,
    sql`DELETE FROM wallet_entries WHERE ${archived}`,
  ].map((statement) => d1Statement(d1, statement));
}

/** Payers whose entries one run archives: three statements each in one batch. */
const PAYERS_PER_RUN = 50;

/**
 * Cron: ledger entries past their window leave D1 for the archive, at most `limit` a run, oldest first;
 * each payer's balance is carried by its brought-forward entry (`bringForward`), exactly.
 */
export async function archiveLedger(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env, now } = ctx;
  const rows = await db
    .select({ entry: walletEntries, ...ownerOfUserRow })
    .from(walletEntries)
    .innerJoin(users, eq(users.id, walletEntries.userId))
    .where(
      and(
        eq(walletEntries.broughtForward, false),
        lt(walletEntries.createdAt, windowStart(now, HOT_WINDOW_DAYS.ledger)),
      ),
    )
    .orderBy(asc(walletEntries.id))
    .limit(input.limit);
  // The entries of the first PAYERS_PER_RUN payers: their batch stays a few hundred statements, whatever
  // the entries spread over (the others' go next minute).
  const byPayer = new Map<number, { ids: number[]; through: string }>();
  const due = rows.filter(({ entry }) => {
    const payer = byPayer.get(entry.userId) ?? (byPayer.size < PAYERS_PER_RUN ? { ids: [], through: "" } : undefined);
    if (!payer) return false;
    payer.ids.push(entry.id);
    payer.through = formatDateTime(entry.createdAt);
    byPayer.set(entry.userId, payer);
    return true;
  });
  return moveToArchive(
    env.ARCHIVE,
    "ledger",
    due.map(({ entry, clientId, groupId }) => ({ ...userRowOf(entry, clientId, groupId), row: entryView(entry) })),
    async () => {
      await env.shard.d1.batch(
        [...byPayer].flatMap(([userId, { ids, through }]) => bringForward(env.shard.d1, userId, ids, through)),
      );
    },
  );
}

/**
 * Cron: events and webhook deliveries past EVENT_RETENTION_MS leave D1 for the archive, at most `limit`
 * of each a run (the newest of each stays whatever its age: `pastRetention`).
 */
export async function archiveOldLogs(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env, now } = ctx;
  const before = new Date(now.getTime() - EVENT_RETENTION_MS).toISOString();
  const oldEvents = pastRetention(db, { table: events, id: events.id, at: events.occurredAt }, before, input.limit);
  const oldDeliveries = pastRetention(
    db,
    { table: webhookDeliveries, id: webhookDeliveries.id, at: webhookDeliveries.createdAt },
    before,
    input.limit,
  );
  const { eventRows, deliveryRows } = await namedBatch(db, {
    eventRows: db
      .select({ event: events, groupId: groupOfClientColumn(events.clientId) })
      .from(events)
      .where(sql`${events.id} IN ${oldEvents}`),
    deliveryRows: db
      .select({
        delivery: webhookDeliveries,
        clientId: webhookEndpoints.clientId,
        groupId: groupOfClientColumn(webhookEndpoints.clientId),
      })
      .from(webhookDeliveries)
      .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
      .where(sql`${webhookDeliveries.id} IN ${oldDeliveries}`),
  });
  await Promise.all([
    writeArchive(
      env.ARCHIVE,
      "events",
      // A row of no client is a shard's reserved id (src/db/moves/cursors.ts), no event: it only goes.
      eventRows.flatMap(({ event, groupId }) =>
        event.clientId === null
          ? []
          : [
              {
                id: event.id,
                groupId,
                clientId: event.clientId,
                userId: event.userId,
                at: event.occurredAt,
                row: eventView(event),
              },
            ],
      ),
    ),
    writeArchive(
      env.ARCHIVE,
      "deliveries",
      deliveryRows.map(({ delivery, clientId, groupId }) => ({
        id: delivery.id,
        groupId,
        clientId,
        userId: null,
        at: delivery.createdAt,
        row: { webhookId: delivery.endpointId, ...deliveryView(delivery) },
      })),
    ),
  ]);
  const { purged, purgedDeliveries } = await namedBatch(db, {
    purged: db.delete(events).where(
      inList(
        events.id,
        eventRows.map(({ event }) => event.id),
      ),
    ),
    purgedDeliveries: db.delete(webhookDeliveries).where(
      inList(
        webhookDeliveries.id,
        deliveryRows.map(({ delivery }) => delivery.id),
      ),
    ),
  });
  return (purged.meta.changes ?? 0) + (purgedDeliveries.meta.changes ?? 0);
}

/**
 * GET /archive/<kind>: a month's archived rows of one kind, oldest first, a page at a time. With `userId`
 * (jobs, images, ledger, events: deliveries are a client's endpoints', and their route takes none), that
 * user's, which the caller may see (an internal client any client's); without, the calling client's own.
 * Rows inside their window are where they were (GET /jobs/, /wallet/, /events/, /webhooks/<id>/deliveries).
 * A page reads the objects it covers, whatever the month holds (`archivePage`).
 */
export async function readArchive(
  ctx: ServiceContext,
  input: { kind: ArchiveKind; month: string; userId?: number | undefined; page: number; itemsPerPage: number },
): Promise<Page<Record<string, unknown>>> {
  const { db, env, caller } = ctx;
  const { kind, month, userId, page, itemsPerPage } = input;
  const owner: ArchiveOwner = {
    // A user without a client (none is made so now) has its rows under client 0.
    clientId:
      userId === undefined ? clientIdOf(caller) : ((await requireUserHistory(db, caller, userId)).clientId ?? 0),
    userId,
  };
  const [group] = await db.select({ id: groupOfClientColumn(sql`${owner.clientId}`) }).from(sql`(SELECT 1)`);
  return archivePage(env.ARCHIVE, {
    folder: `${monthFolder(group?.id ?? 1, month)}${kind}/`,
    owner,
    page,
    itemsPerPage,
  });
}
