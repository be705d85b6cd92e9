import { and, asc, eq, gt, isNotNull, lt, max, notLike, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { type Db, namedBatch } from "../../db/client";
import { inList } from "../../db/inList";
import { feedCursor } from "../../db/moves";
import { events, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { formatDateTime } from "../../lib/time";
import { clientIdOf, isInternal, requireUser, visibleRows } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { type EventType, LATEST } from "./eventTypes";
import type { EventOut } from "./schemas";

/** Events are kept this long; the cron purges older ones. */
export const EVENT_RETENTION_MS = 30 * 86_400_000;

/** A value of the event, or the column (of the `from` table) it comes from. */
type Field<T> = T | SQL | SQLiteColumn;

interface EventFields {
  type: EventType;
  userId: Field<number>;
  adId?: Field<number> | null;
  portal?: Field<string> | null;
  /** A JSON object (SQL, e.g. `json_object(…)`), read when the row is written. */
  data: SQL;
}

/**
 * Events as an INSERT … SELECT for the same D1 batch as the change they report: written exactly when
 * `when` holds (the change happened), each with the client of its user. Without `from`, one event for
 * the user `fields.userId`; with `from`, one per row of that table matching `when` (`fields` then name
 * its columns, e.g. the jobs a batch just wrote).
 */
export function eventOf(db: Db, fields: EventFields, when: SQL = sql`1`, from?: SQLiteTable) {
  const columns = {
    id: sql<number>`NULL`.as("id"),
    clientId: users.clientId,
    userId: users.id,
    type: sql<string>`${fields.type}`.as("type"),
    adId: sql<number | null>`${fields.adId ?? null}`.as("ad_id"),
    portal: sql<string | null>`${fields.portal ?? null}`.as("portal"),
    data: sql<string>`${fields.data}`.as("data"),
    occurredAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("occurred_at"),
    originId: sql<number | null>`NULL`.as("origin_id"),
    origins: sql<string | null>`NULL`.as("origins"),
  };
  const ofUser = sql`${users.id} = ${fields.userId}`;
  return db
    .insert(events)
    .select(
      from
        ? db.select(columns).from(from).innerJoin(users, ofUser).where(when)
        : db.select(columns).from(users).where(and(ofUser, when)),
    );
}

type EventRow = typeof events.$inferSelect;

/** An instant as the database stores it (ISO 8601, UTC). */
const STORED_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/**
 * An event as the feed and webhooks show it. Every time in it, `occurredAt` and those in `data`
 * (`startDate`, `closeDate`, `placedAt`, …), reads as the API's other answers do: `YYYY-MM-DD hh:mm:ss`,
 * Europe/Amsterdam.
 */
export const eventView = (row: EventRow): EventOut =>
  // Each type's data is what its writer stored, not parsed again on every read: the tests hold every
  // writer to the typed schemas (each feed read in test/harness/api.ts, each webhook payload in
  // test/fixtures/hooks.ts).
  ({
    eventId: row.id,
    type: row.type as EventType,
    occurredAt: formatDateTime(row.occurredAt),
    userId: row.userId,
    adId: row.adId,
    portal: row.portal,
    data: Object.fromEntries(
      Object.entries(JSON.parse(row.data) as Record<string, unknown>).map(([key, value]) => [
        key,
        typeof value === "string" && STORED_INSTANT.test(value) ? formatDateTime(value) : value,
      ]),
    ),
  }) as EventOut;
export type EventView = ReturnType<typeof eventView>;

/**
 * GET /events/: the caller's events after a cursor, oldest first. Reading from 0 and following the
 * answered cursor sees every event once, in order.
 */
export async function readEvents(
  ctx: ServiceContext,
  input: { after: number | typeof LATEST; types?: EventType[]; userId?: number; limit: number },
): Promise<{ events: EventView[]; cursor: number }> {
  if (input.userId !== undefined) await requireUser(ctx.db, ctx.caller, input.userId);
  const visible = and(
    // A row of no client is a shard's reserved id (src/db/moves/cursors.ts), no event.
    isNotNull(events.clientId),
    visibleRows(ctx.caller, events.clientId),
    // An internal client sees every client's events, but not the webhook endpoints (URLs) of others.
    isInternal(ctx.caller)
      ? or(notLike(events.type, "webhook.%"), eq(events.clientId, clientIdOf(ctx.caller)))
      : undefined,
  );
  if (input.after === LATEST) {
    // The caller's own latest event (none: 0): polling from it sees every event that happens next, and
    // it says nothing of other clients' events.
    const [own] = await ctx.db
      .select({ id: sql<number>`coalesce(max(${events.id}), 0)` })
      .from(events)
      .where(and(visible, input.userId !== undefined ? eq(events.userId, input.userId) : undefined));
    return { events: [], cursor: own?.id ?? 0 };
  }
  const { after } = input;
  const {
    rows,
    latest: [latest],
  } = await namedBatch(ctx.db, {
    rows: ctx.db
      .select()
      .from(events)
      .where(
        and(
          gt(events.id, feedCursor(after, clientIdOf(ctx.caller))),
          visible,
          input.userId !== undefined ? eq(events.userId, input.userId) : undefined,
          input.types?.length ? inList(events.type, input.types) : undefined,
        ),
      )
      .orderBy(events.id)
      .limit(input.limit),
    latest: ctx.db.select({ id: sql<number>`coalesce(max(${events.id}), 0)` }).from(events),
  });
  // A cursor no answer handed out would silently skip every event up to it. The message names no id
  // beyond the caller's: the latest event may be another client's.
  if (after > (latest?.id ?? 0))
    throw DomainError.of(
      "validation_failed",
      `after: ${after} is beyond the latest event; start from 0, or from latest (after=latest)`,
    );
  return { events: rows.map(eventView), cursor: rows.at(-1)?.id ?? after };
}

/**
 * The ids of a log's rows past the retention among its first `limit`: ids grow with time, so those are the
 * oldest. A purge then reads at most `limit` rows and needs no index on the time. The newest row stays
 * whatever its age: the logs' ids are rowids, which would start again below a cursor a reader holds if the
 * newest were gone.
 */
export function pastRetention(
  db: Db,
  log: { table: SQLiteTable; id: SQLiteColumn; at: SQLiteColumn },
  before: string,
  limit: number,
) {
  const first = db.select({ id: log.id, at: log.at }).from(log.table).orderBy(asc(log.id)).limit(limit).as("first");
  return db
    .select({ id: first.id })
    .from(first)
    .where(and(lt(first.at, before), lt(first.id, db.select({ newest: max(log.id) }).from(log.table))));
}
