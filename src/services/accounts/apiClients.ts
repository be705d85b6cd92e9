import { eq, sql } from "drizzle-orm";
import { getDb, namedBatch } from "../../db/client";
import { copyGroup } from "../../db/directory";
import { firstBlocks } from "../../db/ids";
import { apiClients, clientGroups } from "../../db/schema";
import { readDirectory, shardDatabase, shardForNewGroup } from "../../db/shards";
import type { ApiClient, Env } from "../../env";
import { randomToken, sha256Hex } from "../../lib/crypto";
import { DomainError, detail } from "../../lib/errors";
import { log } from "../../lib/log";
import { clientIdOf } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions, clientRevision } from "../shared/revisions";

/** How long an isolate trusts a key it has looked up; a revocation takes effect within this time. */
export const CLIENT_CACHE_MS = 10_000;
/**
 * How long it trusts the key of a client whose group is moving shards (src/db/moves/): a request finds
 * the group's new shard this soon after the switch, which is as long as its writes wait.
 */
export const MOVING_CLIENT_CACHE_MS = 1_000;
/** Keys remembered per isolate, good and bad; the oldest go first past this. */
const CLIENT_CACHE_SIZE = 10_000;
/** A key's lookup, kept until `until`; once answered, the group of its client (`forgetGroupClients`). */
type CachedKey = { lookup: Promise<ApiClient | null>; until: number; groupId?: number };
const byKeyHash = new Map<string, CachedKey>();

/** The client of a key this isolate looked up recently and found valid; undefined otherwise. */
export async function cachedClient(key: string): Promise<ApiClient | undefined> {
  const cached = byKeyHash.get(await sha256Hex(key));
  if (!cached || cached.until <= Date.now()) return undefined;
  return (await cached.lookup) ?? undefined;
}

/** A key's client as the directory (or a shard's copy of it) holds it. */
type KeyRow = Omit<ApiClient, "internal" | "partner"> & {
  internal: number;
  partner: number;
  movingTo: number | null;
  groupId: number;
};

/**
 * The client a key belongs to, or null. Lookups are shared: concurrent requests with one key make one
 * D1 query, and the response (a bad key too) is kept for CLIENT_CACHE_MS. Read from the directory, or
 * from the shards' copies of it while it does not answer (`readDirectory`).
 */
export async function findClientByKey(env: Env, key: string): Promise<ApiClient | null> {
  const keyHash = await sha256Hex(key);
  const cached = byKeyHash.get(keyHash);
  if (cached && cached.until > Date.now()) return cached.lookup;
  const entry: CachedKey = { lookup: Promise.resolve(null), until: Date.now() + CLIENT_CACHE_MS };
  entry.lookup = readDirectory<KeyRow>(
    env,
    `SELECT c.id, c.name, c.internal, c.partner, c.rate, c.burst, g.shard, g.moving_to AS movingTo, c.group_id AS groupId
     FROM api_clients c JOIN client_groups g ON g.id = c.group_id
     WHERE c.key_hash = ?1 AND c.revoked = 0`,
    keyHash,
  ).then(([row]) => {
    if (!row) return null;
    const { movingTo, groupId, internal, partner, ...client } = row;
    entry.groupId = groupId;
    if (movingTo !== null) entry.until = Math.min(entry.until, Date.now() + MOVING_CLIENT_CACHE_MS);
    return { ...client, internal: Boolean(internal), partner: Boolean(partner) };
  });
  const { lookup } = entry;
  byKeyHash.delete(keyHash);
  byKeyHash.set(keyHash, entry);
  if (byKeyHash.size > CLIENT_CACHE_SIZE) byKeyHash.delete(byKeyHash.keys().next().value as string);
  // A failed lookup is not remembered.
  lookup.catch(() => byKeyHash.delete(keyHash));
  return lookup;
}

/** Forgets the keys this isolate knows of group `groupId`'s clients (a move's runner: their shard changed). */
export function forgetGroupClients(groupId: number): void {
  for (const [keyHash, entry] of byKeyHash) if (entry.groupId === groupId) byKeyHash.delete(keyHash);
}

export interface NewClient {
  name: string;
  internal?: boolean;
  partner?: boolean;
  rate?: number | null;
  burst?: number | null;
  /** The client group it joins; without one, a new group of its own. */
  groupId?: number;
  /** The shard of its new group; without one, the emptiest (`shardForNewGroup`). */
  shard?: number;
}

/** A client's columns as the code knows a client (`ApiClient`, without its shard). */
const clientColumns = {
  id: apiClients.id,
  name: apiClients.name,
  internal: apiClients.internal,
  partner: apiClients.partner,
  rate: apiClients.rate,
  burst: apiClients.burst,
};

/**
 * Creates a client with a fresh key; the key is returned once and only its hash is stored. The client,
 * and its new group with its first id blocks, are written to the directory in one batch, and then copied
 * to the group's shard (a copy that failed is made again by `copyGroup`).
 */
export async function createApiClient(env: Env, input: NewClient): Promise<{ client: ApiClient; key: string }> {
  const key = `cam_${randomToken(32)}`;
  const directory = getDb(env.DIRECTORY);
  const ownGroup = input.groupId === undefined;
  const shard = ownGroup ? await shardForNewGroup(env, input.shard) : undefined;
  // The group inserted first, in the same transaction.
  const newGroup = sql`(SELECT max(${clientGroups.id}) FROM ${clientGroups})`;
  const { group, created } = await namedBatch(directory, {
    group: ownGroup ? directory.insert(clientGroups).values({ shard }).returning() : undefined,
    // Its first blocks of ids, so that its first writes need not lease them.
    blocks: ownGroup ? firstBlocks(newGroup).map((lease) => directory.run(lease)) : undefined,
    created: directory
      .insert(apiClients)
      .values({
        name: input.name,
        keyHash: await sha256Hex(key),
        internal: input.internal ?? false,
        partner: input.partner ?? false,
        rate: input.rate ?? null,
        burst: input.burst ?? null,
        groupId: input.groupId ?? newGroup,
      })
      .returning({ ...clientColumns, groupId: apiClients.groupId }),
  });
  const [row] = created;
  if (!row || (group && !group[0])) throw new Error("the client's insert returned no row");
  const placed =
    group?.[0]?.shard ??
    (
      await directory
        .select({ shard: clientGroups.shard })
        .from(clientGroups)
        .where(eq(clientGroups.id, row.groupId))
        .get()
    )?.shard;
  if (placed === undefined) throw new Error(`the directory has no group ${row.groupId}`);
  await copyGroup(env.DIRECTORY, shardDatabase(env, placed), row.groupId);
  const { groupId: _inTheDirectory, ...client } = row;
  return { client: { ...client, shard: placed }, key };
}

/**
 * The calling client as GET /client/ shows it; `defaults` are the deployment's rate limit. Read from the
 * directory, the one home of what a client registers (its return origins): a group's move does not move
 * it; while the directory does not answer, from its shard's copy (`readDirectory`).
 */
export async function describeClient(ctx: ServiceContext, input: { defaultRate: number; defaultBurst: number }) {
  const [row] = await readDirectory<{
    clientId: number;
    name: string;
    internal: number;
    partner: number;
    rate: number | null;
    burst: number | null;
    returnOrigins: string;
    shard: number;
  }>(
    ctx.env,
    `SELECT c.id AS clientId, c.name, c.internal, c.partner, c.rate, c.burst, c.return_origins AS returnOrigins, g.shard
     FROM api_clients c JOIN client_groups g ON g.id = c.group_id WHERE c.id = ?1`,
    clientIdOf(ctx.caller),
  );
  if (!row) throw new Error("the calling client has no row");
  return {
    clientId: row.clientId,
    name: row.name,
    internal: Boolean(row.internal),
    partner: Boolean(row.partner),
    rate: row.rate ?? input.defaultRate,
    burst: row.burst ?? input.defaultBurst,
    returnOrigins: JSON.parse(row.returnOrigins) as string[],
  };
}

/** How long a caller waits before sending a change of its settings again that the directory did not take. */
const DIRECTORY_RETRY_SECONDS = 10;

/**
 * PATCH /client/: the calling client's return origins, written to the shard's copy of the client with the
 * revision its ETag reads, then to the directory (their home); answers the client as GET /client/ does.
 * A directory that does not answer: 503 `service_unavailable`, and the call is sent again.
 */
export async function updateClient(
  ctx: ServiceContext,
  input: { returnOrigins: string[]; defaultRate: number; defaultBurst: number },
) {
  const clientId = clientIdOf(ctx.caller);
  const returnOrigins = [...new Set(input.returnOrigins)];
  // The shard's batch first, which checks the precondition: a refused If-Match changes nothing, in the
  // directory either. (A directory write that fails after it leaves the copy ahead until the call is sent
  // again; nothing reads the copy's origins.)
  await ctx.db.batch([
    bumpRevisions(ctx.db, [clientRevision(clientId)], ctx.precondition),
    ctx.db.update(apiClients).set({ returnOrigins }).where(eq(apiClients.id, clientId)),
  ]);
  await getDb(ctx.env.DIRECTORY)
    .update(apiClients)
    .set({ returnOrigins })
    .where(eq(apiClients.id, clientId))
    .catch((error: unknown) => {
      log("error", "client settings not written to the directory", {
        clientId,
        error: error instanceof Error ? error.message : String(error),
      });
      throw new DomainError(
        detail(
          "service_unavailable",
          "returnOrigins: the client directory did not answer, so the change is not in force; send it again",
        ),
        { retryAfterSeconds: DIRECTORY_RETRY_SECONDS },
      );
    });
  return describeClient(ctx, input);
}
