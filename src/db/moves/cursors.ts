/**
 * Event cursors across moves. A group's events keep their shard's own ids (the feed's cursor), so a move
 * numbers them anew on the target, past every id either shard handed out, in their order; each keeps its
 * source id as `origin_id`, and its ids in every era before in `origins`. A cursor below the group's
 * `events_from` was handed out before a move, and is read through the moved events' origins.
 */
import { type SQL, sql } from "drizzle-orm";

/**
 * A cursor the previous shard handed out, in the moved events' ids: the newest moved event of the client
 * at or before it (as SQL over the cursor, the client and the group's first id on this shard).
 */
export function movedCursorSql(cursor: string, client: string, eventsFrom: string): string {
  return `coalesce((SELECT max(m.id) FROM events m WHERE m.client_id = ${client} AND m.id >= ${eventsFrom} AND m.origin_id <= ${cursor}), ${eventsFrom} - 1)`;
}

/**
 * The event feed's cursor `after` of client `client`, in this shard's ids. One handed out before the
 * group's last move (below its `events_from`) is of the era its value falls in (`event_eras`: the n-th
 * boundary and above is era n), and reads on at the newest of the client's events whose id in that era
 * (`origins`) is at or before it; events the group wrote since have no id there, and come after it.
 */
export function feedCursor(after: number, client: number): SQL {
  const cursor = String(Math.trunc(after));
  const clientId = String(Math.trunc(client));
  const era = `(SELECT count(*) FROM json_each(g.event_eras) b WHERE b.value <= ${cursor})`;
  return sql.raw(`coalesce((SELECT CASE WHEN ${cursor} > 0 AND ${cursor} < g.events_from
    THEN coalesce((SELECT max(m.id) FROM events m WHERE m.client_id = ${clientId} AND m.id >= g.events_from
      AND json_extract(m.origins, '$[' || ${era} || ']') <= ${cursor}), g.events_from - 1)
    ELSE ${cursor} END
    FROM api_clients c JOIN client_groups g ON g.id = c.group_id WHERE c.id = ${clientId}), ${cursor})`);
}

/**
 * What marks a log's highest id as taken on a shard whose newest rows a move took away: a rowid freed at
 * the top would be handed out again, below cursors its readers hold. No feed shows it (it has no client).
 */
export const RESERVED_EVENT_TYPE = "shard.id_reserved";
