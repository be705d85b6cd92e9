import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { apiClients } from "../db/schema";
import type { ApiClient } from "../env";
import { randomToken, sha256Hex } from "../lib/crypto";

/** How long an isolate trusts a key it has looked up; a revocation takes effect within this time. */
export const CLIENT_CACHE_MS = 10_000;
const byKeyHash = new Map<string, { client: ApiClient | null; until: number }>();

export async function findClientByKey(db: Db, key: string): Promise<ApiClient | null> {
  const keyHash = await sha256Hex(key);
  const cached = byKeyHash.get(keyHash);
  if (cached && cached.until > Date.now()) return cached.client;
  const row = await db
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
    .get();
  const client = row ?? null;
  byKeyHash.set(keyHash, { client, until: Date.now() + CLIENT_CACHE_MS });
  return client;
}

export interface NewClient {
  name: string;
  internal?: boolean;
  partner?: boolean;
  rate?: number | null;
  burst?: number | null;
}

/** Creates a client with a fresh key; the key is returned once and only its hash is stored. */
export async function createApiClient(db: Db, input: NewClient): Promise<{ client: ApiClient; key: string }> {
  const key = `cam_${randomToken(32)}`;
  const row = await db
    .insert(apiClients)
    .values({
      name: input.name,
      keyHash: await sha256Hex(key),
      internal: input.internal ?? false,
      partner: input.partner ?? false,
      rate: input.rate ?? null,
      burst: input.burst ?? null,
    })
    .returning()
    .get();
  const { id, name, internal, partner, rate, burst } = row;
  return { client: { id, name, internal, partner, rate, burst }, key };
}
