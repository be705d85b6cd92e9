/**
 * Step 5 of a move, once no isolate routes the group to the source (its directory entry is cached for
 * seconds): the source's rows of the group go, children first, with its change log, triggers and copies
 * of the group. The same drop undoes a move abandoned before its switch, on the target.
 */
import { RESERVED_EVENT_TYPE } from "./cursors";
import { dropTriggers, MOVED_TABLES, ownedBy, PAGE, quoted, runDdl } from "./tables";

/**
 * Drops every row group `group` has on shard `d1`, with the move's triggers there and its copies of the
 * group, its clients and its blocks. Answers the rows deleted. The shard's newest event id stays taken
 * (`RESERVED_EVENT_TYPE`): its readers' cursors never find ids handed out again below them.
 */
export async function dropGroup(d1: D1Database, group: number): Promise<number> {
  await runDdl(d1, dropTriggers(group, "fence", "guard", "log"));
  const newest = await d1.prepare("SELECT coalesce(max(id), 0) AS id FROM events").first<{ id: number }>();
  let deleted = 0;
  for (const table of [...MOVED_TABLES].reverse()) {
    for (;;) {
      const { meta } = await d1
        .prepare(
          `DELETE FROM ${quoted(table.name)} WHERE rowid IN (SELECT rowid FROM ${quoted(table.name)} t WHERE ${ownedBy(table, "t", group)} LIMIT ${PAGE})`,
        )
        .run();
      deleted += meta.changes ?? 0;
      if (!meta.changes) break;
    }
  }
  await d1.batch([
    d1
      .prepare(
        `INSERT INTO events (id, client_id, user_id, type, data) SELECT ?1, NULL, NULL, ?2, '{}'
         WHERE ?1 > 0 AND NOT EXISTS (SELECT 1 FROM events WHERE id >= ?1)`,
      )
      .bind(newest?.id ?? 0, RESERVED_EVENT_TYPE),
    d1.prepare("DELETE FROM move_log WHERE group_id = ?1").bind(group),
    d1
      .prepare("DELETE FROM client_ad_tallies WHERE client_id IN (SELECT id FROM api_clients WHERE group_id = ?1)")
      .bind(group),
    d1.prepare("DELETE FROM id_blocks WHERE group_id = ?1").bind(group),
    d1.prepare("DELETE FROM api_clients WHERE group_id = ?1").bind(group),
    d1.prepare("DELETE FROM client_groups WHERE id = ?1").bind(group),
  ]);
  return deleted;
}

/**
 * What a move leaves on the group's own shard once it is over (switched there, or abandoned before its
 * switch): no triggers of the move, no change log, and its copy of the group naming no move.
 */
export async function settleGroup(d1: D1Database, group: number): Promise<void> {
  await runDdl(d1, dropTriggers(group, "log", "fence", "guard"), [
    d1.prepare("DELETE FROM move_log WHERE group_id = ?1").bind(group),
    d1.prepare("UPDATE client_groups SET moving_to = NULL WHERE id = ?1").bind(group),
  ]);
}
