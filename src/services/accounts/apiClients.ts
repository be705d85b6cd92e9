import { and, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { firstBlocks } from "../../db/ids";
import { apiClients, clientGroups } from "../../db/schema";
import type { ApiClient } from "../../env";
import { randomToken, sha256Hex } from "../../lib/crypto";
import { clientIdOf } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions, clientRevision } from "../shared/revisions";

/** How long an isolate trusts a key it has looked up; a revocation takes effect within this time. */
export const CLIENT_CACHE_MS = 10_000;
/** Keys remembered per isolate, good and bad; the oldest go first past this. */
const CLIENT_CACHE_SIZE = 10_000;
const byKeyHash = new Map<string, { lookup: Promise<ApiClient | null>; until: number }>();

/** The client of a key this isolate looked up recently and found valid; undefined otherwise. */
export async function cachedClient(key: string): Promise<ApiClient | undefined> {
  const cached = byKeyHash.get(await sha256Hex(key));
  if (!cached || cached.until <= Date.now()) return undefined;
  return (await cached.lookup) ?? undefined;
}

/**
 * The client a key belongs to, or null. Lookups are shared: concurrent requests with one key make one
 * D1 query, and the response (a bad key too) is kept for CLIENT_CACHE_MS.
 */
export async function findClientByKey(db: Db, key: string): Promise<ApiClient | null> {
  const keyHash = await sha256Hex(key);
  const cached = byKeyHash.get(keyHash);
  if (cached && cached.until > Date.now()) return cached.lookup;
  const lookup = db
    .select({
      id: apiClients.id,
      name: apiClients.name,
      internal: apiClients.internal,
      partner: apiClients.partner,
      rate: apiClients.rate,
      burst: apiClients.burst,
    })
    .from(apiClients)
    .where(and(eq(apiClients.keyHash, keyHash), eq(apiClients.revoked, false)))
    .get()
    .then((row) => row ?? null);
  byKeyHash.delete(keyHash);
  byKeyHash.set(keyHash, { lookup, until: Date.now() + CLIENT_CACHE_MS });
  if (byKeyHash.size > CLIENT_CACHE_SIZE) byKeyHash.delete(byKeyHash.keys().next().value as string);
  // A failed lookup is not remembered.
  lookup.catch(() => byKeyHash.delete(keyHash));
  return lookup;
}

export interface NewClient {
  name: string;
  internal?: boolean;
  partner?: boolean;
  rate?: number | null;
  burst?: number | null;
  /** The client group it joins; without one, a new group of its own. */
  groupId?: number;
}

/** Creates a client with a fresh key; the key is returned once and only its hash is stored. */
export async function createApiClient(db: Db, input: NewClient): Promise<{ client: ApiClient; key: string }> {
  const key = `cam_${randomToken(32)}`;
  const ownGroup = input.groupId === undefined;
  // The group inserted first, in the same transaction.
  const newGroup = sql`(SELECT max(${clientGroups.id}) FROM ${clientGroups})`;
  const { group, created } = await namedBatch(db, {
    group: ownGroup ? db.insert(clientGroups).values({}).returning({ id: clientGroups.id }) : undefined,
    // Its first blocks of ids, so that its first writes need not lease them.
    blocks: ownGroup ? firstBlocks(newGroup).map((lease) => db.run(lease)) : undefined,
    created: db
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
      .returning(),
  });
  const [row] = created;
  if (!row || (group && !group[0])) throw new Error("the client's insert returned no row");
  const { id, name, internal, partner, rate, burst } = row;
  return { client: { id, name, internal, partner, rate, burst }, key };
}

/** The calling client as GET /client/ shows it; `defaults` are the deployment's rate limit. */
export async function describeClient(ctx: ServiceContext, input: { defaultRate: number; defaultBurst: number }) {
  const row = await ctx.db
    .select({
      clientId: apiClients.id,
      name: apiClients.name,
      internal: apiClients.internal,
      partner: apiClients.partner,
      rate: apiClients.rate,
      burst: apiClients.burst,
      returnOrigins: apiClients.returnOrigins,
    })
    .from(apiClients)
    .where(eq(apiClients.id, clientIdOf(ctx.caller)))
    .get();
  if (!row) throw new Error("the calling client has no row");
  return { ...row, rate: row.rate ?? input.defaultRate, burst: row.burst ?? input.defaultBurst };
}

/** PATCH /client/: the calling client's return origins; answers the client as GET /client/ does. */
export async function updateClient(
  ctx: ServiceContext,
  input: { returnOrigins: string[]; defaultRate: number; defaultBurst: number },
) {
  const clientId = clientIdOf(ctx.caller);
  await ctx.db.batch([
    ctx.db
      .update(apiClients)
      .set({ returnOrigins: [...new Set(input.returnOrigins)] })
      .where(eq(apiClients.id, clientId)),
    bumpRevisions(ctx.db, [clientRevision(clientId)], ctx.precondition),
  ]);
  return describeClient(ctx, input);
}
