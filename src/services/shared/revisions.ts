import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { cacheRevisions } from "../../db/schema";

/**
 * Revisions behind the response cache. A cached answer's key holds the revisions of the scopes it
 * depends on; every write bumps its scopes in the same batch as the write, so the next read misses.
 */
export const USERS_SCOPE = "users";
/** The catalogue changes only with migrations; its revision is never bumped (answers live 30 s at most). */
export const CATALOGUE_SCOPE = "catalogue";
export const userScope = (userId: number) => `user:${userId}`;

/** The scopes a write below a user touches: the user's own and the user list (which embeds contacts). */
export const userWriteScopes = (userId: number) => [userScope(userId), USERS_SCOPE];

export function bumpRevisions(db: Db, scopes: string[]) {
  return db
    .insert(cacheRevisions)
    .values(scopes.map((scope) => ({ scope, revision: 1 })))
    .onConflictDoUpdate({ target: cacheRevisions.scope, set: { revision: sql`${cacheRevisions.revision} + 1` } });
}

export async function readRevisions(db: Db, scopes: string[]): Promise<string> {
  const rows = await db.select().from(cacheRevisions).where(inList(cacheRevisions.scope, scopes));
  const byScope = new Map(rows.map((r) => [r.scope, r.revision]));
  return scopes.map((scope) => `${scope}=${byScope.get(scope) ?? 0}`).join(",");
}
