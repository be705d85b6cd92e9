/**
 * A move's progress, kept in the directory (`client_groups.move_progress`) from its start until it is
 * confirmed or abandoned, so that any runner resumes it where the last step ended; one runner at a time
 * holds it under a lease.
 */

/** A move's figures so far. */
export interface MoveFigures {
  group: number;
  from: number;
  to: number;
  /** Rows copied in the copy step, and per table. */
  copied: number;
  copiedPerTable: Record<string, number>;
  copyMs: number;
  /** Keys caught up, and rounds, before the switch. */
  caughtUp: number;
  rounds: number;
}

/** Where a move stands: still moving, or on the target (where `/confirm` finds it). */
export interface MoveState extends MoveFigures {
  state: "moving" | "moved";
  /** Once moved: how long writes to the group were refused. */
  pauseMs: number | null;
  /** Once moved: the group's first event id on the target. */
  eventsFrom: number | null;
  /** Why the last runner could not take the move on (null: nothing stops it). */
  blocker: string | null;
}

/**
 * The ids a move's logs get on the target, past every id either shard handed out, and the group's eras of
 * event ids before it (`client_groups.event_eras`).
 */
export interface MoveNumbering {
  eventsFrom: number;
  deliveriesFrom: number;
  /** Absent in a move begun before eras were kept: none. */
  eras?: number[];
}

/** Where a move stands between its steps: a step that fails leaves it as the step before did. */
export interface MoveProgress extends MoveFigures {
  /** When it began (ms): an isolate may route by what it read of the directory before, for `settleMs`. */
  startedAt: number;
  /** The target has the group's clients, and the source the triggers that log its changes. */
  prepared: boolean;
  /** The copy's next table (an index of MOVED_TABLES; past the last once all are copied), and rowid. */
  table: number;
  after: number;
  /** The change log's last entry caught up. */
  seq: number;
  /** When writes were fenced (set just before), and the ids the group's logs get, fixed once caught up. */
  fencedAt: number | null;
  numbering: MoveNumbering | null;
  /** Once on the target: how long writes waited, and when the directory named the target (ms). */
  pauseMs: number | null;
  switchedAt: number | null;
  /** Who runs the move's step now, until when: one runner at a time. */
  lease: { runner: string; until: number } | null;
  /** The last runner's failure, until a runner gets past it. */
  blocker?: string | null;
  /** An operator is abandoning it (`abandonMove`): no runner takes it on. */
  abandoning?: true;
}

export interface MoveShards {
  directory: D1Database;
  source: D1Database;
  target: D1Database;
}

/** How long past its budget a step's lease holds, before another runner may take the move over. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Starts moving group `group` from shard `from` to shard `to`: the directory marks it moving and keeps its
 * progress. `advanceMove` then does the work; answers false if it is not on `from`, or has a move that is
 * not confirmed yet.
 */
export async function beginMove(
  directory: D1Database,
  input: { group: number; from: number; to: number },
): Promise<boolean> {
  const { group, from, to } = input;
  const progress: MoveProgress = {
    group,
    from,
    to,
    copied: 0,
    copiedPerTable: {},
    copyMs: 0,
    caughtUp: 0,
    rounds: 0,
    startedAt: Date.now(),
    prepared: false,
    table: 0,
    after: Number.MIN_SAFE_INTEGER,
    seq: 0,
    fencedAt: null,
    numbering: null,
    pauseMs: null,
    switchedAt: null,
    lease: null,
  };
  const started = await directory
    .prepare(
      `UPDATE client_groups SET moving_to = ?2, move_progress = ?4
       WHERE id = ?1 AND shard = ?3 AND moving_to IS NULL AND move_progress IS NULL`,
    )
    .bind(group, to, from, JSON.stringify(progress))
    .run();
  return Boolean(started.meta.changes);
}

/** The groups a move switched over `olderThanMs` ago and nobody confirmed yet (the cron confirms them). */
export async function switchedMoves(directory: D1Database, olderThanMs: number): Promise<number[]> {
  const { results } = await directory
    .prepare(
      "SELECT id FROM client_groups WHERE moving_to IS NULL AND move_progress ->> '$.switchedAt' <= ?1 ORDER BY id",
    )
    .bind(Date.now() - olderThanMs)
    .all<{ id: number }>();
  return results.map((row) => row.id);
}

/** Group `group`'s move as the directory keeps it, or null when it has none since its last confirmed one. */
export async function moveProgress(directory: D1Database, group: number): Promise<MoveProgress | null> {
  const row = await directory
    .prepare("SELECT move_progress AS progress FROM client_groups WHERE id = ?1")
    .bind(group)
    .first<{ progress: string | null }>();
  return row?.progress ? (JSON.parse(row.progress) as MoveProgress) : null;
}

/** Where group `group`'s move stands, or null when it has none since its last confirmed one. */
export async function moveState(directory: D1Database, group: number): Promise<MoveState | null> {
  const progress = await moveProgress(directory, group);
  return progress ? stateOf(progress) : null;
}

export function stateOf(progress: MoveProgress): MoveState {
  const { group, from, to, copied, copiedPerTable, copyMs, caughtUp, rounds, pauseMs, numbering } = progress;
  const figures = {
    group,
    from,
    to,
    copied,
    copiedPerTable,
    copyMs,
    caughtUp,
    rounds,
    blocker: progress.blocker ?? null,
  };
  return pauseMs !== null && numbering
    ? { ...figures, state: "moved", pauseMs, eventsFrom: numbering.eventsFrom }
    : { ...figures, state: "moving", pauseMs: null, eventsFrom: null };
}

/** A move's progress held by one runner until its lease ends: it keeps it, and lets it go. */
export interface HeldMove {
  progress: MoveProgress;
  runner: string;
  /** Keeps the progress while the runner holds the move (`release`: and lets it go). */
  save(release?: boolean): Promise<void>;
}

/**
 * Takes group `group`'s move under way for a runner until `deadline` (and a margin): null while another
 * runner holds it, or when it has no move under way.
 */
export async function holdMove(directory: D1Database, group: number, deadline: number): Promise<HeldMove | null> {
  const runner = crypto.randomUUID();
  const claimed = await directory
    .prepare(
      `UPDATE client_groups SET move_progress = json_set(move_progress, '$.lease', json(?2))
       WHERE id = ?1 AND moving_to IS NOT NULL AND coalesce(move_progress ->> '$.lease.until', 0) < ?3
       RETURNING move_progress AS progress`,
    )
    .bind(group, JSON.stringify({ runner, until: deadline + LEASE_MARGIN_MS }), Date.now())
    .first<{ progress: string }>();
  if (!claimed) return null;
  const progress = JSON.parse(claimed.progress) as MoveProgress;
  return {
    progress,
    runner,
    async save(release = false) {
      const kept = { ...progress, lease: release ? null : progress.lease };
      const { meta } = await directory
        .prepare(
          "UPDATE client_groups SET move_progress = ?2 WHERE id = ?1 AND move_progress ->> '$.lease.runner' = ?3",
        )
        .bind(group, JSON.stringify(kept), runner)
        .run();
      if (!meta.changes) throw new Error(`group ${group}: another runner took the move over`);
    },
  };
}
