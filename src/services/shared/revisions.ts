import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { cacheRevisions } from "../../db/schema";

/**
 * Revisions behind the response cache. A cached response's key holds the revisions of the parts of the
 * data it depends on (revision keys: "ads", "users", "user:<id>"); every write bumps its keys in the
 * same batch as the write, so the next read misses.
 */
export const USERS_REVISION = "users";
export const ADS_REVISION = "ads";
/**
 * What the user list depends on: the users, and the ads (its contacts say whether they have active ads).
 * So an ad write bumps the ads' key and its owner's, not the user list's as well: one row less per write.
 */
export const USER_LIST_REVISIONS = [USERS_REVISION, ADS_REVISION];
/** The catalogue changes only with migrations; its revision is never bumped (answers live 30 s at most). */
export const CATALOGUE_REVISION = "catalogue";
export const userRevision = (userId: number) => `user:${userId}`;

/** The revision keys a write below a user touches: the user's own and the user list (which embeds contacts). */
export const userWriteRevisions = (userId: number) => [userRevision(userId), USERS_REVISION];

export function bumpRevisions(db: Db, revisionKeys: string[]) {
  return db
    .insert(cacheRevisions)
    .values(revisionKeys.map((key) => ({ key, revision: 1 })))
    .onConflictDoUpdate({ target: cacheRevisions.key, set: { revision: sql`${cacheRevisions.revision} + 1` } });
}

export async function readRevisions(db: Db, revisionKeys: string[]): Promise<string> {
  const rows = await db.select().from(cacheRevisions).where(inList(cacheRevisions.key, revisionKeys));
  const byKey = new Map(rows.map((r) => [r.key, r.revision]));
  return revisionKeys.map((key) => `${key}=${byKey.get(key) ?? 0}`).join(",");
}
