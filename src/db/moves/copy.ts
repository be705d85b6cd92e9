/**
 * Steps 1 and 2 of a move: the target gets the group's clients and id blocks and the guard triggers that
 * keep every writer but the move off the group's rows there; the source gets the triggers that log the
 * group's changes; then each table's rows of the group go to the target in pages by rowid, parents before
 * children. A row whose parent is not there yet was written after its parent's page: the log has it.
 */
import { copyGroup } from "../directory";
import { SAVE_EVERY_PAGES, type StepBudget } from "./budget";
import type { MoveProgress, MoveShards } from "./progress";
import {
  type Columns,
  logTriggers,
  MOVED_TABLES,
  type MovedTable,
  markMoving,
  moveBatch,
  ownedBy,
  PAGE,
  quoted,
  type Row,
  refusingTriggers,
  runDdl,
  upsert,
} from "./tables";

/** Step 1, once: the target ready to take the group's rows, the source logging what changes. */
export async function prepareMove(
  { directory, source, target }: MoveShards,
  progress: MoveProgress,
  columnsOf: (table: MovedTable) => Columns,
): Promise<void> {
  if (progress.prepared) return;
  await copyGroup(directory, target, progress.group);
  // The target's copy of the group names the move: its cron leaves the copy until the switch.
  await runDdl(target, refusingTriggers(progress.group, "guard"), [markMoving(target, progress.group, progress.to)]);
  await runDdl(source, logTriggers(progress.group, columnsOf));
  progress.prepared = true;
}

/** A page's queries: its read on the source, and its write on the target (one batch). */
const PAGE_QUERIES = 2;

/**
 * Step 2: copies pages of the group's rows until every table is copied or the step's budget is spent (a
 * page at least), keeping its progress every SAVE_EVERY_PAGES pages (`keep`).
 */
export async function copyPages(
  { source, target }: MoveShards,
  progress: MoveProgress,
  columnsOf: (table: MovedTable) => Columns,
  step: { budget: StepBudget; keep: () => Promise<void> },
): Promise<void> {
  const { group } = progress;
  const copyStart = Date.now();
  let pages = 0;
  while (progress.table < MOVED_TABLES.length) {
    const table = MOVED_TABLES[progress.table] as MovedTable;
    const { results } = await source
      .prepare(
        `SELECT rowid AS move_rowid, * FROM ${quoted(table.name)} t WHERE rowid > ?1 AND ${ownedBy(table, "t", group)} ORDER BY rowid LIMIT ${PAGE}`,
      )
      .bind(progress.after)
      .all<Row & { move_rowid: number }>();
    step.budget.spend(1);
    if (results.length > 0) {
      await moveBatch(target, group, [upsert(target, table, columnsOf(table), results.map(withoutRowid))]);
      step.budget.spend(PAGE_QUERIES - 1);
      progress.after = results.at(-1)?.move_rowid as number;
      progress.copied += results.length;
      progress.copiedPerTable[table.name] = (progress.copiedPerTable[table.name] ?? 0) + results.length;
    }
    if (results.length < PAGE) {
      progress.table += 1;
      progress.after = Number.MIN_SAFE_INTEGER;
    }
    pages += 1;
    if (pages % SAVE_EVERY_PAGES === 0) {
      await step.keep();
      step.budget.spend(1);
    }
    if (step.budget.exhausted(PAGE_QUERIES)) break;
  }
  progress.copyMs += Date.now() - copyStart;
}

const withoutRowid = ({ move_rowid: _, ...row }: Row) => row;
