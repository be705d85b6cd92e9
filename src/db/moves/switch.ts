/**
 * Step 4 of a move, the switch: triggers on the source refuse every write to the group's rows (the API
 * answers 503 `group_moving`, a job's message is retried) and its scheduled work leaves them; the last
 * changes are caught up; the group's events and webhook deliveries get the target's ids; the directory
 * names the target. Writes pause for this step only.
 */
import { copyGroup } from "../directory";
import { catchUpAll } from "./catchUp";
import { movedCursorSql } from "./cursors";
import type { HeldMove, MoveNumbering, MoveShards } from "./progress";
import {
  type Columns,
  dropTriggers,
  type MovedTable,
  markMoving,
  moveBatch,
  movedTable,
  ownedBy,
  quoted,
  refusingTriggers,
  runDdl,
} from "./tables";

/** Fences the group's writes on the source, catches the last changes up and fixes the ids its logs get. */
export async function fenceAndNumber(
  shards: MoveShards,
  held: HeldMove,
  columnsOf: (table: MovedTable) => Columns,
): Promise<void> {
  const { source } = shards;
  const { progress } = held;
  progress.fencedAt ??= Date.now();
  await held.save();
  await runDdl(source, refusingTriggers(progress.group, "fence"), [markMoving(source, progress.group, progress.to)]);
  const last = await catchUpAll(shards, progress.group, columnsOf, progress.seq);
  progress.seq = last.seq;
  progress.caughtUp += last.keys;
  await carryIdBlocks(shards, progress.group);
  progress.numbering = await numberingPast(shards, progress.group);
  await held.save();
}

/**
 * The group's id blocks as the fenced source holds them: every block the directory leased it, each with
 * the highest id deleted at its top there (`deleted_high`, the shard's own), so that the target never
 * issues an id again that named a row whose traces outlive it (a deleted ad's jobs and listings).
 */
async function carryIdBlocks({ directory, source, target }: MoveShards, group: number): Promise<void> {
  await copyGroup(directory, target, group);
  const { results } = await source
    .prepare(
      "SELECT kind, block, deleted_high AS deletedHigh FROM id_blocks WHERE group_id = ?1 AND deleted_high IS NOT NULL",
    )
    .bind(group)
    .all<{ kind: string; block: number; deletedHigh: number }>();
  if (results.length === 0) return;
  await target
    .prepare(
      `UPDATE id_blocks SET deleted_high = max(coalesce(deleted_high, 0), j.value ->> '$.deletedHigh')
       FROM json_each(?1) j WHERE id_blocks.kind = j.value ->> '$.kind' AND id_blocks.block = j.value ->> '$.block'`,
    )
    .bind(JSON.stringify(results))
    .run();
}

/**
 * Numbers the moved logs and names the target in the directory: from here the group is the target's. The
 * source keeps its fenced rows (its copy of the group names the move, so its cron leaves them) until the
 * move is confirmed.
 */
export async function switchToTarget(shards: MoveShards, held: HeldMove): Promise<void> {
  const { directory, source, target } = shards;
  const { progress, runner } = held;
  const { group } = progress;
  const numbering = progress.numbering as MoveNumbering;
  const eras = JSON.stringify([...(numbering.eras ?? []), numbering.eventsFrom]);
  await numberMovedLogs(shards, group, numbering);
  // The target holds what the fenced source holds: from here on it is the group's.
  await runDdl(target, dropTriggers(group, "guard"));
  const switchedAt = Date.now();
  const moved = {
    ...progress,
    pauseMs: switchedAt - (progress.fencedAt ?? switchedAt),
    switchedAt,
    lease: null,
    blocker: null,
  };
  const switched = await directory
    .prepare(
      `UPDATE client_groups SET shard = ?2, moving_to = NULL, events_from = ?3, event_eras = ?6, move_progress = ?4
       WHERE id = ?1 AND moving_to = ?2 AND move_progress ->> '$.lease.runner' = ?5`,
    )
    .bind(group, progress.to, numbering.eventsFrom, JSON.stringify(moved), runner, eras)
    .run();
  if (!switched.meta.changes) throw new Error(`group ${group}: another runner took the move over`);
  Object.assign(progress, moved);
  // The target's cron takes the group on (were this lost, the confirmation clears the mark again).
  await markMoving(target, group, null).run();
  await copyGroup(directory, target, group);
  await source.prepare("UPDATE client_groups SET shard = ?2 WHERE id = ?1").bind(group, progress.to).run();
  await runDdl(source, dropTriggers(group, "log"));
}

/**
 * The ids past every one either shard handed out: where the group's events and deliveries are numbered
 * from; with the group's eras so far, as the directory keeps them.
 */
async function numberingPast({ directory, source, target }: MoveShards, group: number): Promise<MoveNumbering> {
  const highest = async (table: string) => {
    const [onSource, onTarget] = await Promise.all(
      [source, target].map((d1) =>
        d1.prepare(`SELECT coalesce(max(id), 0) AS id FROM ${quoted(table)}`).first<{ id: number }>(),
      ),
    );
    return Math.max(onSource?.id ?? 0, onTarget?.id ?? 0);
  };
  const kept = await directory
    .prepare("SELECT event_eras AS eras FROM client_groups WHERE id = ?1")
    .bind(group)
    .first<{ eras: string | null }>();
  return {
    eventsFrom: (await highest("events")) + 1,
    deliveriesFrom: (await highest("webhook_deliveries")) + 1,
    eras: kept?.eras ? (JSON.parse(kept.eras) as number[]) : [],
  };
}

/**
 * Numbers the group's copied events and webhook deliveries from `numbering`, in their order, and points the
 * deliveries and the endpoints' positions at the new event ids, in one batch that ends by writing
 * `events_from` and the eras to the target's copy of the group: a resumed switch finds it there and
 * numbers nothing twice. Each event's id on the source joins its ids of the eras before (`origins`, with
 * null for the eras before it existed).
 */
async function numberMovedLogs({ target }: MoveShards, group: number, numbering: MoveNumbering): Promise<void> {
  const { eventsFrom, deliveriesFrom, eras = [] } = numbering;
  const numbered = await target
    .prepare("SELECT 1 FROM client_groups WHERE id = ?1 AND events_from = ?2")
    .bind(group, eventsFrom)
    .first();
  if (numbered) return;
  const ownEvents = ownedBy(movedTable("events"), "e", group);
  const ownDeliveries = ownedBy(movedTable("webhook_deliveries"), "d", group);
  const before = JSON.stringify(eras.map(() => null));
  await moveBatch(target, group, [
    target
      .prepare(
        `UPDATE events SET origins = json_insert(coalesce(origins, ?1), '$[#]', origin_id) WHERE id < 0 AND ${ownedBy(movedTable("events"), "events", group)}`,
      )
      .bind(before),
    target
      .prepare(
        `UPDATE events SET id = r.renumbered FROM (SELECT id AS staged, ?1 - 1 + row_number() OVER (ORDER BY origin_id) AS renumbered
         FROM events e WHERE id < 0 AND ${ownEvents}) r WHERE events.id = r.staged`,
      )
      .bind(eventsFrom),
    target.prepare(
      `UPDATE webhook_deliveries AS d SET event_id = (SELECT e.id FROM events e WHERE e.origin_id = d.event_id AND ${ownEvents})
       WHERE id < 0 AND event_id IS NOT NULL AND ${ownDeliveries}`,
    ),
    target
      .prepare(
        `UPDATE webhook_deliveries SET id = r.renumbered FROM (SELECT id AS staged, ?1 - 1 + row_number() OVER (ORDER BY -id) AS renumbered
         FROM webhook_deliveries d WHERE id < 0 AND ${ownDeliveries}) r WHERE webhook_deliveries.id = r.staged`,
      )
      .bind(deliveriesFrom),
    target
      .prepare(
        `UPDATE webhook_endpoints SET last_event_id = ${movedCursorSql("last_event_id", "webhook_endpoints.client_id", "?1")},
         replay_until = CASE WHEN replay_until = 0 THEN 0 ELSE ${movedCursorSql("replay_until", "webhook_endpoints.client_id", "?1")} END
         WHERE ${ownedBy(movedTable("webhook_endpoints"), "webhook_endpoints", group)}`,
      )
      .bind(eventsFrom),
    target
      .prepare("UPDATE client_groups SET events_from = ?2, event_eras = ?3 WHERE id = ?1")
      .bind(group, eventsFrom, JSON.stringify([...eras, eventsFrom])),
  ]);
}
