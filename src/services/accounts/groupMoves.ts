import { getDb } from "../../db/client";
import {
  abandonMove,
  advanceMove,
  beginMove,
  dropGroup,
  type MoveState,
  moveProgress,
  moveState,
  STEP_QUERIES,
  settleGroup,
  switchedMoves,
} from "../../db/moves";
import { forgetGroupPlaces, onShard, shardDatabase, shardNumbers } from "../../db/shards";
import type { Env } from "../../env";
import { DomainError, detail } from "../../lib/errors";
import { log } from "../../lib/log";
import { resendJobsCutByMove } from "../publishing";
import { jobContext } from "../shared";
import { isInternal } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { ADS_REVISION, bumpRevisions, USERS_REVISION } from "../shared/revisions";
import { CLIENT_CACHE_MS, forgetGroupClients } from "./apiClients";

/** How long a move's request, or the cron, runs it on before keeping its progress for the next. */
export const MOVE_STEP_MS = 20_000;

/** Where group `groupId` is, as the directory has it; an unknown group is refused. */
async function requireGroup(env: Env, groupId: number) {
  const group = await env.DIRECTORY.prepare("SELECT shard, moving_to AS movingTo FROM client_groups WHERE id = ?1")
    .bind(groupId)
    .first<{ shard: number; movingTo: number | null }>();
  if (!group) throw DomainError.of("group_not_found", `groupId: no client group ${groupId}`);
  return group;
}

/** The databases of group `groupId`'s move from shard `from` to shard `to`. */
const moveShards = (env: Env, from: number, to: number) => ({
  directory: env.DIRECTORY,
  source: shardDatabase(env, from),
  target: shardDatabase(env, to),
});

/**
 * Moves client group `groupId` to shard `shard`, online (src/db/moves/): its clients keep reading
 * throughout and their writes wait for the switch only. Runs the move for up to MOVE_STEP_MS and answers
 * where it stands; the cron, or this call again, runs a move still under way on. The old shard keeps the
 * group's rows, refusing writes, until `confirmGroupMove`. A move back (or on) of a group whose last move
 * is not confirmed confirms that one first, once no isolate can route by it; a group moving elsewhere is
 * refused (409 `move_under_way`), and nothing is left behind.
 */
export async function moveClientGroup(
  ctx: Pick<ServiceContext, "env" | "caller">,
  input: { groupId: number; shard: number },
): Promise<MoveState> {
  requireInternal(ctx, "groupId");
  const { env } = ctx;
  const { groupId, shard: to } = input;
  const group = await requireGroup(env, groupId);
  if (!shardNumbers(env).includes(to))
    throw DomainError.of("validation_failed", `shard: no shard ${to}; the shards are ${shardNumbers(env).join(", ")}`);
  if (group.movingTo !== null && group.movingTo !== to)
    throw DomainError.of(
      "move_under_way",
      `groupId: group ${groupId} is moving to shard ${group.movingTo}; finish that move (the same call to shard ${group.movingTo}) or abandon it (DELETE /clientgroups/${groupId}/move) first`,
    );
  if (group.movingTo === null) {
    if (group.shard === to)
      throw DomainError.of("validation_failed", `shard: group ${groupId} is on shard ${to} already`);
    await confirmEarlierMove(env, groupId);
    if (!(await beginMove(env.DIRECTORY, { group: groupId, from: group.shard, to })))
      throw DomainError.of("move_under_way", `groupId: group ${groupId} began moving meanwhile`);
    forgetGroupRoutes(groupId);
  }
  return runMove(env, groupId, group.shard, to);
}

/**
 * Confirms group `groupId`'s last move, switched and not confirmed yet, before another begins; refused
 * (with when to try again) while an isolate may still route the group by what it read before the switch.
 */
async function confirmEarlierMove(env: Env, groupId: number) {
  const earlier = await moveProgress(env.DIRECTORY, groupId);
  if (!earlier) return;
  const confirmableIn = (earlier.switchedAt ?? 0) + CLIENT_CACHE_MS - Date.now();
  if (confirmableIn > 0)
    throw new DomainError(
      detail(
        "move_under_way",
        `groupId: group ${groupId}'s move to shard ${earlier.to} switched less than ${CLIENT_CACHE_MS / 1000} s ago; it can be confirmed, and the group moved again, in ${Math.ceil(confirmableIn / 1000)} s`,
      ),
      { retryAfterSeconds: Math.ceil(confirmableIn / 1000) },
    );
  await confirmMoveOf(env, groupId);
}

/**
 * Abandons group `groupId`'s move before its switch, at any step (a runner that died in it included): the
 * group stays on its shard, which takes its writes again at once, and the shard it was going to drops what
 * the move copied. A move that switched is confirmed or reversed (moved back) instead.
 */
export async function abandonGroupMove(
  ctx: Pick<ServiceContext, "env" | "caller">,
  groupId: number,
): Promise<{ groupId: number; shard: number; dropped: number }> {
  requireInternal(ctx, "groupId");
  const { env } = ctx;
  const group = await requireGroup(env, groupId);
  const to = group.movingTo ?? (await moveProgress(env.DIRECTORY, groupId))?.to;
  if (to === undefined) throw DomainError.of("validation_failed", `groupId: group ${groupId} has no move to abandon`);
  const outcome = await abandonMove(moveShards(env, group.shard, to), groupId);
  if ("refused" in outcome) {
    if (outcome.refused === "held")
      throw new DomainError(
        detail("move_under_way", `groupId: a runner is taking group ${groupId}'s move on; try again when it pauses`),
        { retryAfterSeconds: Math.ceil(MOVE_STEP_MS / 1000) },
      );
    throw DomainError.of(
      "move_under_way",
      `groupId: group ${groupId}'s move to shard ${to} has switched; confirm it (POST /clientgroups/${groupId}/move/confirm), or move the group back`,
    );
  }
  await bumpListRevisions(env, [group.shard, to]);
  return { groupId, shard: group.shard, dropped: outcome.dropped };
}

/** Where group `groupId`'s move stands (internal clients): under way, or done and not confirmed yet. */
export async function groupMoveState(ctx: Pick<ServiceContext, "env" | "caller">, groupId: number): Promise<MoveState> {
  requireInternal(ctx, "groupId");
  const state = await moveState(ctx.env.DIRECTORY, groupId);
  if (!state) throw DomainError.of("move_not_found", `groupId: group ${groupId} has no move to report`);
  return state;
}

/**
 * A moved group nobody confirmed this long after its switch is confirmed by the cron: the old shard keeps
 * its fenced copy no longer than it must. Well past CLIENT_CACHE_MS: no isolate routes there.
 */
export const CONFIRM_AFTER_MS = 60_000;

/**
 * The cron's part: runs every move under way on for up to MOVE_STEP_MS, side by side, and confirms the
 * moves switched over CONFIRM_AFTER_MS ago. Answers how many moves were under way, how many switched,
 * how many were confirmed, and why any failed (each is taken up again at the next run).
 */
export async function continueGroupMoves(
  env: Env,
): Promise<{ moving: number; moved: number; confirmed: number; failed: string[] }> {
  const [{ results: moving }, switched] = await Promise.all([
    env.DIRECTORY.prepare(
      "SELECT id, shard, moving_to AS movingTo FROM client_groups WHERE moving_to IS NOT NULL",
    ).all<{ id: number; shard: number; movingTo: number }>(),
    switchedMoves(env.DIRECTORY, CONFIRM_AFTER_MS),
  ]);
  const [runs, confirms] = await Promise.all([
    // The moves share the invocation's queries (STEP_QUERIES in all).
    Promise.allSettled(
      moving.map((group) =>
        runMove(env, group.id, group.shard, group.movingTo, Math.floor(STEP_QUERIES / moving.length)),
      ),
    ),
    Promise.allSettled(switched.map((groupId) => confirmMoveOf(env, groupId))),
  ]);
  const failures = (settled: PromiseSettledResult<unknown>[], groups: number[]) =>
    settled.flatMap((run, at) =>
      run.status === "rejected" ? [`group ${groups[at]}: ${String(run.reason?.message ?? run.reason)}`] : [],
    );
  return {
    moving: moving.length,
    moved: runs.filter((run) => run.status === "fulfilled" && run.value.state === "moved").length,
    confirmed: confirms.filter((confirm) => confirm.status === "fulfilled").length,
    failed: [
      ...failures(
        runs,
        moving.map((group) => group.id),
      ),
      ...failures(confirms, switched),
    ],
  };
}

async function runMove(
  env: Env,
  groupId: number,
  from: number,
  to: number,
  queries = STEP_QUERIES,
): Promise<MoveState> {
  const { state, switched } = await advanceMove(moveShards(env, from, to), groupId, {
    settleMs: CLIENT_CACHE_MS,
    budgetMs: MOVE_STEP_MS,
    queries,
  });
  if (!state) throw DomainError.of("validation_failed", `groupId: group ${groupId} has no move under way`);
  if (switched) {
    forgetGroupRoutes(groupId);
    // The move is done whatever follows: a job this misses is the cron's stuck-job recovery's, minutes on.
    await resendJobsCutByMove(jobContext(onShard(env, to, "the group's")), { groupId }).catch((error: unknown) =>
      log("error", "sending a moved group's cut-off jobs again failed", {
        groupId,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
    await bumpListRevisions(env, [from, to]);
  }
  return state;
}

/**
 * Confirms the moves of group `groupId`: every shard but its own drops what it still holds of it. Run it
 * once the move's switch is CLIENT_CACHE_MS past, when no isolate routes the group by an older read (the
 * cron does, CONFIRM_AFTER_MS after the switch). Answers the rows deleted per shard.
 */
export async function confirmGroupMove(
  ctx: Pick<ServiceContext, "env" | "caller">,
  groupId: number,
): Promise<Record<number, number>> {
  requireInternal(ctx, "groupId");
  return confirmMoveOf(ctx.env, groupId);
}

/** A move's confirmation, by an internal client or by the cron (CONFIRM_AFTER_MS after the switch). */
async function confirmMoveOf(env: Env, groupId: number): Promise<Record<number, number>> {
  const group = await requireGroup(env, groupId);
  if (group.movingTo !== null) throw DomainError.of("validation_failed", `groupId: group ${groupId} is still moving`);
  await settleGroup(shardDatabase(env, group.shard), groupId);
  const deleted: Record<number, number> = {};
  for (const shard of shardNumbers(env).filter((n) => n !== group.shard)) {
    const source = shardDatabase(env, shard);
    const left = await source.prepare("SELECT 1 FROM client_groups WHERE id = ?1").bind(groupId).first();
    if (left) deleted[shard] = await dropGroup(source, groupId);
  }
  await env.DIRECTORY.prepare("UPDATE client_groups SET move_progress = NULL WHERE id = ?1").bind(groupId).run();
  await bumpListRevisions(env, Object.keys(deleted).map(Number));
  return deleted;
}

/**
 * What this isolate read of the group's clients and blocks goes: the runner of a move routes the group by
 * the directory at once, at its start (cached a second from then) and after its switch.
 */
export function forgetGroupRoutes(groupId: number): void {
  forgetGroupPlaces(groupId);
  forgetGroupClients(groupId);
}

/** Moving groups is the platform's operation: its internal clients' only. */
function requireInternal(ctx: Pick<ServiceContext, "caller">, field: string) {
  if (!isInternal(ctx.caller))
    throw DomainError.of("internal_only", `${field}: groups are moved by internal clients only`);
}

/** Lists cached across shards (`useCache=1`) key on their revisions: a move changes what they hold. */
async function bumpListRevisions(env: Env, shards: number[]) {
  await Promise.all(
    shards.map((shard) => bumpRevisions(getDb(shardDatabase(env, shard)), [USERS_REVISION, ADS_REVISION])),
  );
}
