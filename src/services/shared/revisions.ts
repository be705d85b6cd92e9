import { eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { cacheRevisions } from "../../db/schema";
import { violatesCheck } from "../../db/triggers";
import { entityTag, type Precondition } from "../../lib/entityTags";
import { DomainError } from "../../lib/errors";

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

/** The revision keys of a client's own settings and of one of its webhook endpoints. */
export const clientRevision = (clientId: number) => `client:${clientId}`;
export const webhookRevision = (webhookId: number) => `webhook:${webhookId}`;

export async function readEntityTag(db: Db, key: string): Promise<string> {
  return entityTag(key, await readRevision(db, key));
}

/** One key's revision (0 before its first write). */
export async function readRevision(db: Db, key: string): Promise<number> {
  const row = await db
    .select({ revision: cacheRevisions.revision })
    .from(cacheRevisions)
    .where(eq(cacheRevisions.key, key))
    .get();
  return row?.revision ?? 0;
}

const PRECONDITION_FAILED = "If-Match: the resource changed since the ETag was read; read it again";

/**
 * Bumps the revision keys a write touches, as one statement of the write's batch. With a precondition,
 * the bump of the key it names checks the revision first: another revision writes -1, which the table's
 * check refuses, and the whole batch rolls back (the error answers 412: `preconditionFailure`).
 */
export function bumpRevisions(db: Db, revisionKeys: string[], precondition?: Precondition) {
  const expected =
    precondition && !precondition.any ? expectedRevisions(precondition, revisionKeys) : new Map<string, number[]>();
  const next = [...expected].reduce(
    (otherwise, [key, revisions]) =>
      sql`CASE WHEN ${cacheRevisions.key} = ${key} AND ${cacheRevisions.revision} NOT IN (${sql.join(revisions, sql`, `)}) THEN -1 ELSE ${otherwise} END`,
    sql`${cacheRevisions.revision} + 1`,
  );
  // A key's row is never deleted: a tag read with revision 0 finds no row, or the row another write made.
  return db
    .insert(cacheRevisions)
    .values(revisionKeys.map((key) => ({ key, revision: 1 })))
    .onConflictDoUpdate({ target: cacheRevisions.key, set: { revision: next } });
}

/**
 * Refuses a conditional write early, before it does what no batch can take back (a token revoked at a
 * marketplace): the revisions as they are now. The write's batch still checks them (`bumpRevisions`).
 */
export async function requirePrecondition(db: Db, revisionKeys: string[], precondition: Precondition | undefined) {
  if (!precondition || precondition.any) return;
  const expected = expectedRevisions(precondition, revisionKeys);
  const rows = await db
    .select()
    .from(cacheRevisions)
    .where(inList(cacheRevisions.key, [...expected.keys()]));
  for (const [key, revisions] of expected)
    if (!revisions.includes(rows.find((row) => row.key === key)?.revision ?? 0))
      throw DomainError.of("precondition_failed", PRECONDITION_FAILED);
}

/** The revisions the caller read, per key this write bumps; a precondition that names none of them fails. */
function expectedRevisions(precondition: { tags: { key: string; revision: number }[] }, revisionKeys: string[]) {
  const expected = new Map<string, number[]>();
  for (const { key, revision } of precondition.tags)
    if (revisionKeys.includes(key)) expected.set(key, [...(expected.get(key) ?? []), revision]);
  if (expected.size === 0) throw DomainError.of("precondition_failed", PRECONDITION_FAILED);
  return expected;
}

/** A write's batch refused by its precondition (the revision check), as the coded error. */
export const preconditionFailure = (error: unknown) =>
  violatesCheck(error, "if_match") ? DomainError.of("precondition_failed", PRECONDITION_FAILED) : undefined;

export async function readRevisions(db: Db, revisionKeys: string[]): Promise<string> {
  const rows = await db.select().from(cacheRevisions).where(inList(cacheRevisions.key, revisionKeys));
  const byKey = new Map(rows.map((r) => [r.key, r.revision]));
  return revisionKeys.map((key) => `${key}=${byKey.get(key) ?? 0}`).join(",");
}
