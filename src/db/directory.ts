/**
 * The directory's rows a shard keeps a copy of (src/db/shards.ts): a group, its clients and its id
 * blocks. The copy is what the shard's queries (a row's group, the next id of a block) and foreign keys
 * read; the directory stays the authority.
 */
import { eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { batchAll, getDb, namedBatch } from "./client";
import { copyBlocks } from "./ids";
import { rowChunks } from "./rowChunks";
import { apiClients, clientGroups, idBlocks, users } from "./schema";

/**
 * Copies a group's row, clients and id blocks from the directory into a shard; what the shard holds of
 * them already is brought up to the directory's. Running it again changes nothing.
 */
export async function copyGroup(directory: D1Database, shard: D1Database, groupId: number): Promise<void> {
  const from = getDb(directory);
  const { group, clients, blocks } = await namedBatch(from, {
    group: from.select().from(clientGroups).where(eq(clientGroups.id, groupId)),
    clients: from.select().from(apiClients).where(eq(apiClients.groupId, groupId)),
    blocks: from
      .select({ kind: idBlocks.kind, block: idBlocks.block, groupId: idBlocks.groupId })
      .from(idBlocks)
      .where(eq(idBlocks.groupId, groupId)),
  });
  if (group.length === 0) throw new Error(`the directory has no group ${groupId}`);
  const to = getDb(shard);
  const fromDirectory = (column: { name: string }) => sql.raw(`excluded.${column.name}`);
  await batchAll(to, [
    to
      .insert(clientGroups)
      // A move's progress is the directory's alone; a shard's `moving_to` is what a move marks there
      // (src/db/moves/tables.ts `markMoving`).
      .values(group.map(({ moveProgress: _, movingTo: _marked, ...copied }) => copied))
      .onConflictDoUpdate({
        target: clientGroups.id,
        set: {
          shard: fromDirectory(clientGroups.shard),
          eventsFrom: fromDirectory(clientGroups.eventsFrom),
          eventEras: fromDirectory(clientGroups.eventEras),
        },
      }),
    ...rowChunks(apiClients, clients).map((chunk) =>
      to
        .insert(apiClients)
        .values(chunk)
        .onConflictDoUpdate({
          target: apiClients.id,
          set: {
            name: fromDirectory(apiClients.name),
            keyHash: fromDirectory(apiClients.keyHash),
            internal: fromDirectory(apiClients.internal),
            partner: fromDirectory(apiClients.partner),
            rate: fromDirectory(apiClients.rate),
            burst: fromDirectory(apiClients.burst),
            revoked: fromDirectory(apiClients.revoked),
            groupId: fromDirectory(apiClients.groupId),
            returnOrigins: fromDirectory(apiClients.returnOrigins),
          },
        }),
    ),
  ]);
  await copyBlocks(shard, blocks);
}

/**
 * The origins a client registered for consent's `returnUrl` (PATCH /client/). The directory is their one
 * home (a shard's copy of the client follows it), so a group's move leaves them as they are.
 */
export async function returnOriginsOf(directory: D1Database, clientId: number): Promise<string[]> {
  const row = await getDb(directory)
    .select({ returnOrigins: apiClients.returnOrigins })
    .from(apiClients)
    .where(eq(apiClients.id, clientId))
    .get();
  return row?.returnOrigins ?? [];
}

/**
 * The clients whose group's copy on this shard names a move (src/db/moves/: the copy a move is filling,
 * or rows it has fenced), as SQL: their rows are not this shard's to work on.
 */
const movingClients = sql`SELECT c.id FROM ${apiClients} c JOIN ${clientGroups} g ON g.id = c.group_id WHERE g.moving_to IS NOT NULL`;

/**
 * SQL: the client's rows on this shard are the shard's to work on. A shard's scheduled work takes only
 * these, so it neither acts on a copy nor twice on rows another shard now holds.
 */
export const settledClient = (clientId: SQLiteColumn | SQL) => sql`${clientId} NOT IN (${movingClients})`;

/** SQL: the user's rows on this shard are the shard's to work on (`settledClient`, by the user's client). */
export const settledUser = (userId: SQLiteColumn | SQL) =>
  sql`${userId} NOT IN (SELECT u.id FROM ${users} u WHERE u.client_id IN (${movingClients}))`;
