/**
 * Abandoning a move before its switch, at any step: the source takes the group's writes again, the target
 * drops what the move copied, and the directory forgets the move. Each part can run twice: a call that
 * fails half-way leaves the move marked `abandoning` (no runner takes it on), and the next call finishes.
 */
import { dropGroup, settleGroup } from "./confirm";
import { holdMove, type MoveShards } from "./progress";

/** Why a move could not be abandoned: it has switched, or a runner holds it (for a step's budget). */
export type AbandonRefusal = "switched" | "held" | "none";

/**
 * Abandons group `group`'s move under way (not switched yet). Answers the rows the target dropped, or why
 * it could not.
 */
export async function abandonMove(
  shards: MoveShards,
  group: number,
): Promise<{ dropped: number } | { refused: AbandonRefusal }> {
  const { directory, source, target } = shards;
  const held = await holdMove(directory, group, Date.now());
  if (!held) {
    const row = await directory
      .prepare("SELECT moving_to AS movingTo, move_progress AS progress FROM client_groups WHERE id = ?1")
      .bind(group)
      .first<{ movingTo: number | null; progress: string | null }>();
    return { refused: row?.movingTo ? "held" : row?.progress ? "switched" : "none" };
  }
  held.progress.abandoning = true;
  await held.save();
  // The source first: the group's writes go on there at once.
  await settleGroup(source, group);
  const dropped = await dropGroup(target, group);
  const { meta } = await directory
    .prepare(
      `UPDATE client_groups SET moving_to = NULL, move_progress = NULL
       WHERE id = ?1 AND move_progress ->> '$.lease.runner' = ?2`,
    )
    .bind(group, held.runner)
    .run();
  if (!meta.changes) throw new Error(`group ${group}: another runner took the move over`);
  return { dropped };
}
