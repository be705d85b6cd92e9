import { and, eq, lt, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { idempotencyKeys } from "../../db/schema";
import { open, seal, type TokenKeys } from "../../lib/secretBox";
import type { JobContext } from "../shared/context";

/** How long a first response is kept and replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/**
 * A first request holds its key this long past its last renewal; it renews the lock every third of
 * that while it runs, so one that died without answering frees its key within a minute, and one that
 * is slow keeps it until it answers.
 */
export const IDEMPOTENCY_LOCK_MS = 60_000;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type KeyClaim =
  | { kind: "claimed" }
  | { kind: "running" }
  | { kind: "mismatch" }
  | { kind: "replay"; answer: StoredResponse };

/**
 * Claims a key for a request, atomically: a new key (or an expired one, or a lock its request left
 * behind) is taken by exactly one caller; otherwise the caller learns whether the first request is
 * still running, was another request, or has a response to replay.
 */
export async function claimKey(
  db: Db,
  keys: TokenKeys,
  clientId: number,
  key: string,
  fingerprint: string,
  now: Date,
): Promise<KeyClaim> {
  const at = now.toISOString();
  const {
    claimed,
    existing: [existing],
  } = await namedBatch(db, {
    claimed: db
      .insert(idempotencyKeys)
      .values({
        clientId,
        key,
        fingerprint,
        lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS).toISOString(),
        expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString(),
      })
      .onConflictDoUpdate({
        target: [idempotencyKeys.clientId, idempotencyKeys.key],
        set: {
          fingerprint: sql`excluded.fingerprint`,
          lockedUntil: sql`excluded.locked_until`,
          status: null,
          headers: null,
          body: null,
          expiresAt: sql`excluded.expires_at`,
        },
        setWhere: sql`${idempotencyKeys.expiresAt} < ${at} OR (${idempotencyKeys.status} IS NULL AND ${idempotencyKeys.lockedUntil} < ${at} AND ${idempotencyKeys.fingerprint} = excluded.fingerprint)`,
      })
      .returning({ key: idempotencyKeys.key }),
    existing: db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key))),
  });
  if (claimed.length > 0) return { kind: "claimed" };
  if (!existing || existing.fingerprint !== fingerprint) return { kind: "mismatch" };
  if (existing.status === null || existing.body === null) return { kind: "running" };
  return {
    kind: "replay",
    answer: { status: existing.status, headers: existing.headers ?? {}, body: await openBody(existing.body, keys) },
  };
}

// Answers kept before they were sealed are JSON as they were, until they expire (24 h after a deploy).
const openBody = (body: string, keys: TokenKeys) => (body.startsWith("{") ? body : open(body, keys));

/** Extends the lock of a request still running (only while it has no answer). */
export async function renewKey(db: Db, clientId: number, key: string, now: Date): Promise<void> {
  await db
    .update(idempotencyKeys)
    .set({ lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS).toISOString() })
    .where(
      and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key), sql`${idempotencyKeys.status} IS NULL`),
    );
}

/**
 * Whether a first response is kept for replay: a success, or a refusal of the request itself (its body,
 * size, type or rights), which the same request would get again. A refusal that depends on state that
 * can change (404, 409 such as `insufficient_means` or `user_locked`, 429) and any 5xx free the key, so
 * the same key runs anew once the client has fixed the state. (Stripe keeps every response of an endpoint
 * that started executing, but not a refusal before it or a conflict with a concurrent request.)
 */
export const keepsResponse = (status: number) => status < 400 || [400, 403, 413, 415, 422].includes(status);

/**
 * Keeps the first response for replay, its body sealed (the secret box of the portal tokens): answers hold
 * tokens and secrets (an activation token, a login link, a webhook's signing secret), never at rest in clear.
 */
export async function storeResponse(
  db: Db,
  keys: TokenKeys,
  clientId: number,
  key: string,
  answer: StoredResponse,
): Promise<void> {
  const body = await seal(answer.body, keys);
  await db
    .update(idempotencyKeys)
    .set({ status: answer.status, headers: answer.headers, body, lockedUntil: null })
    .where(and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key)));
}

/** Frees a key whose request failed unexpectedly, so that the client can try again with it. */
export async function releaseKey(db: Db, clientId: number, key: string): Promise<void> {
  await db.delete(idempotencyKeys).where(and(eq(idempotencyKeys.clientId, clientId), eq(idempotencyKeys.key, key)));
}

/** Cron: drops expired keys, at most `limit` a run. */
export async function purgeExpiredKeys(ctx: Pick<JobContext, "db" | "now">, input: { limit: number }): Promise<number> {
  const { db, now } = ctx;
  const expired = db
    .select({ rowid: sql`rowid` })
    .from(idempotencyKeys)
    .where(lt(idempotencyKeys.expiresAt, now.toISOString()))
    .limit(input.limit);
  const result = await db.delete(idempotencyKeys).where(sql`rowid IN ${expired}`);
  return result.meta.changes ?? 0;
}
