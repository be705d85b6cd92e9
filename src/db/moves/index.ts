/**
 * Moving a client group from one shard to another while its clients work (issue 56), in the order a move
 * runs; each step can run twice, and the move's progress is kept in the directory (progress.ts), so any
 * runner resumes it where the last one stopped:
 *
 * 1. **Start** (progress.ts `beginMove`): the directory marks the group `moving_to` (its clients are then
 *    cached for a second only, src/middleware/auth.ts).
 * 2. **Copy** (copy.ts): the target gets the group's clients, blocks and guard triggers, the source the
 *    triggers that log the group's changes; then each group-owned table's rows (tables.ts: derived from
 *    the declarations beside the schema, src/db/ownership.ts) go over in pages.
 * 3. **Catch up** (catchUp.ts): the logged keys are copied again, round after round, while writes go on.
 * 4. **Switch** (switch.ts): the source refuses the group's writes (503 `group_moving`), the last changes
 *    are caught up, the group's events and deliveries get the target's ids (cursors.ts), the directory
 *    names the target. advance.ts runs steps 2 to 4 for a budget.
 * 5. **Confirm** (confirm.ts), once no isolate can still route to the source: the source drops the group.
 *
 * Before its switch a move can be **abandoned** (abandon.ts); after it, it is confirmed and can be
 * reversed by a move back. Whatever a shard's copy of a group names a move for (`moving_to`), that shard's
 * scheduled work leaves (`settledClient`, src/db/directory.ts): the target's copy until the switch, the
 * source's fenced rows from the switch until they are dropped.
 *
 * The tallies, the search index and the ads' details are not copied: the target's triggers build them.
 * Nor are webhook leases (a delivery's slot, a few seconds long): they go with their endpoints.
 */
export { abandonMove } from "./abandon";
export { advanceMove } from "./advance";
export { STEP_QUERIES } from "./budget";
export { dropGroup, settleGroup } from "./confirm";
export { feedCursor, RESERVED_EVENT_TYPE } from "./cursors";
export { groupHoldings } from "./holdings";
export {
  beginMove,
  type MoveProgress,
  type MoveShards,
  type MoveState,
  moveProgress,
  moveState,
  switchedMoves,
} from "./progress";
export { GROUP_MOVING } from "./tables";
