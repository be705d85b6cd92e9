/**
 * A move's runner: steps 1 to 4 (copy.ts, catchUp.ts, switch.ts) for a budget, keeping the progress in the
 * directory, one runner at a time. A runner that dies leaves the move where its last finished part did,
 * and the next resumes it there; every part can run twice.
 */
import { StepBudget } from "./budget";
import { catchUp } from "./catchUp";
import { copyPages, prepareMove } from "./copy";
import { holdMove, type MoveShards, type MoveState, moveState, stateOf } from "./progress";
import { fenceAndNumber, switchToTarget } from "./switch";
import { columnsOfEveryTable, MOVED_TABLES, PAGE } from "./tables";

/**
 * Runs group `group`'s move on for about `budgetMs` and at most `queries` D1 queries of copy and catch-up
 * (its progress kept as it goes), then keeps its progress and answers where it stands,
 * and whether this call switched it. The switch, once begun, runs to its end whatever the budget: writes
 * wait for it only. One runner at a time holds the move (another's call answers where it stands and does
 * nothing); one that fails leaves the move where its last finished part left it, with why (`blocker`), for
 * the next to resume.
 */
export async function advanceMove(
  shards: MoveShards,
  group: number,
  options: {
    /** How long an isolate may route by what it read of the directory before the move began. */
    settleMs: number;
    budgetMs: number;
    /** The queries its copy and catch-up may make (STEP_QUERIES). */
    queries?: number;
  },
): Promise<{ state: MoveState | null; switched: boolean }> {
  const deadline = Date.now() + options.budgetMs;
  const budget = new StepBudget(deadline, options.queries);
  const held = await holdMove(shards.directory, group, deadline);
  if (!held) return { state: await moveState(shards.directory, group), switched: false };
  const { progress } = held;
  const pause = async () => {
    progress.blocker = null;
    await held.save(true);
    return { state: stateOf(progress), switched: false };
  };
  if (progress.abandoning) {
    progress.blocker = `the move is being abandoned: DELETE /clientgroups/${group}/move again finishes that`;
    await held.save(true);
    return { state: stateOf(progress), switched: false };
  }
  try {
    const columnsOf = await columnsOfEveryTable(shards.source);
    budget.spend(1);
    if (!progress.numbering) {
      await prepareMove(shards, progress, columnsOf);
      await copyPages(shards, progress, columnsOf, { budget, keep: () => held.save() });
      if (progress.table < MOVED_TABLES.length) return await pause();
      // Catch up while writes go on, until a round finds little to do and every isolate reads the
      // directory again within a second (what it read before the move began is at most `settleMs` old).
      for (;;) {
        const round = await catchUp(shards, group, columnsOf, progress.seq);
        budget.spend(round.queries);
        progress.seq = round.seq;
        progress.caughtUp += round.keys;
        progress.rounds += 1;
        const settled = round.keys < PAGE / 5 && Date.now() >= progress.startedAt + options.settleMs;
        if (settled) break;
        if (budget.exhausted(round.queries)) return await pause();
        if (round.keys < PAGE / 5) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await fenceAndNumber(shards, held, columnsOf);
    }
    await switchToTarget(shards, held);
    return { state: stateOf(progress), switched: true };
  } catch (error) {
    // What this step finished is kept, and the move is free for the next runner at once.
    progress.blocker = error instanceof Error ? error.message : String(error);
    await held.save(true).catch(() => undefined);
    throw error;
  }
}
