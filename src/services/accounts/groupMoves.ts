import { getDb } from "../../db/client";
import { confirmMove, type MoveReport, moveGroup } from "../../db/moves";
import { shardDatabase, shardNumbers } from "../../db/shards";
import type { Env } from "../../env";
import { DomainError } from "../../lib/errors";
import { isInternal } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { ADS_REVISION, bumpRevisions, USERS_REVISION } from "../shared/revisions";
import { CLIENT_CACHE_MS } from "./apiClients";

/**
 * Moves client group `groupId` to shard `shard`, online (src/db/moves.ts): its clients keep reading
 * throughout and their writes wait for the switch only. The old shard keeps the group's rows, refusing
 * writes, until `confirmGroupMove`.
 */
export async function moveClientGroup(
  ctx: Pick<ServiceContext, "env" | "caller">,
  input: { groupId: number; shard: number },
): Promise<MoveReport> {
  requireInternal(ctx, "groupId");
  const { env } = ctx;
  const { groupId, shard: to } = input;
  const group = await env.DIRECTORY.prepare("SELECT shard, moving_to AS movingTo FROM client_groups WHERE id = ?1")
    .bind(groupId)
    .first<{ shard: number; movingTo: number | null }>();
  if (!group) throw DomainError.of("validation_failed", `groupId: no client group ${groupId}`);
  if (!shardNumbers(env).includes(to))
    throw DomainError.of("validation_failed", `shard: no shard ${to}; the shards are ${shardNumbers(env).join(", ")}`);
  if (group.shard === to)
    throw DomainError.of("validation_failed", `shard: group ${groupId} is on shard ${to} already`);
  if (group.movingTo !== null) throw DomainError.of("validation_failed", `groupId: group ${groupId} is moving already`);
  const report = await moveGroup(
    { directory: env.DIRECTORY, source: shardDatabase(env, group.shard), target: shardDatabase(env, to) },
    { group: groupId, from: group.shard, to, settleMs: CLIENT_CACHE_MS },
  );
  await bumpListRevisions(env, [group.shard, to]);
  return report;
}

/**
 * Confirms the moves of group `groupId`: every shard but its own drops what it still holds of it. Run it
 * once the move's switch is CLIENT_CACHE_MS past, when no isolate routes the group by an older read.
 * Answers the rows deleted per shard.
 */
export async function confirmGroupMove(
  ctx: Pick<ServiceContext, "env" | "caller">,
  groupId: number,
): Promise<Record<number, number>> {
  requireInternal(ctx, "groupId");
  const { env } = ctx;
  const group = await env.DIRECTORY.prepare("SELECT shard, moving_to AS movingTo FROM client_groups WHERE id = ?1")
    .bind(groupId)
    .first<{ shard: number; movingTo: number | null }>();
  if (!group) throw DomainError.of("validation_failed", `groupId: no client group ${groupId}`);
  if (group.movingTo !== null) throw DomainError.of("validation_failed", `groupId: group ${groupId} is still moving`);
  const deleted: Record<number, number> = {};
  for (const shard of shardNumbers(env).filter((n) => n !== group.shard)) {
    const source = shardDatabase(env, shard);
    const left = await source.prepare("SELECT 1 FROM client_groups WHERE id = ?1").bind(groupId).first();
    if (left) deleted[shard] = await confirmMove({ source }, groupId);
  }
  await bumpListRevisions(env, Object.keys(deleted).map(Number));
  return deleted;
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
