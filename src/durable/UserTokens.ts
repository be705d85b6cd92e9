import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { randomToken, sha256Hex, timingSafeEqualText } from "../lib/crypto";

export type TokenKind = "login" | "activation";

/** How long an expired token is remembered before the alarm drops it. */
export const KEEP_EXPIRED_MS = 24 * 60 * 60 * 1000;

export type IssueResult = { issued: true; token: string; expiresAt: number } | { issued: false; reason: "limited" };

export type RedeemResult = { ok: true } | { ok: false; reason: "invalid" | "revoked" | "used" | "expired" };

/** A cap on generations of a token kind within a rolling window. */
export interface GenerationLimit {
  max: number;
  windowMs: number;
}

/**
 * Login-link and activation-token state of one user (one object per user id), and the lock that lets
 * one marketplace token refresh of the user run at a time (`exclusive`). Token state is in the
 * object's SQLite storage, so eviction loses nothing, and the object handles one call at a time, so
 * "newest token wins" and "a link works once" hold under any concurrency. Only SHA-256 hashes of tokens
 * are kept. Callers pass `now` (ms) so the clock is explicit and testable.
 */
export class UserTokens extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Per name, the end of the last work queued under it (see `exclusive`). */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS tokens (
      kind TEXT NOT NULL, token_hash TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
      state TEXT NOT NULL DEFAULT 'valid')`);
    this.sql.exec("CREATE TABLE IF NOT EXISTS generations (kind TEXT NOT NULL, at INTEGER NOT NULL)");
  }

  /** A new token of `kind`; every earlier token of that kind is revoked. Refused when over `limit`. */
  async issue(kind: TokenKind, ttlMs: number, now: number, limit?: GenerationLimit): Promise<IssueResult> {
    if (limit) {
      this.sql.exec("DELETE FROM generations WHERE kind = ? AND at <= ?", kind, now - limit.windowMs);
      const row = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM generations WHERE kind = ?", kind).one();
      if (row.n >= limit.max) return { issued: false, reason: "limited" };
      this.sql.exec("INSERT INTO generations (kind, at) VALUES (?, ?)", kind, now);
    }
    const token = randomToken(32);
    const expiresAt = now + ttlMs;
    this.sql.exec("UPDATE tokens SET state = 'revoked' WHERE kind = ? AND state = 'valid'", kind);
    this.sql.exec(
      "INSERT INTO tokens (kind, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
      kind,
      await sha256Hex(token),
      now,
      expiresAt,
    );
    // Expired tokens are kept a day (so a late use hears "expired"), then the alarm drops them.
    const purgeAt = expiresAt + KEEP_EXPIRED_MS;
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > purgeAt) await this.ctx.storage.setAlarm(purgeAt);
    return { issued: true, token, expiresAt };
  }

  override async alarm(): Promise<void> {
    this.purge(Date.now(), KEEP_EXPIRED_MS);
    const next = this.sql.exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM tokens").one().at;
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(Date.now() + 60_000, next + KEEP_EXPIRED_MS));
  }

  /** Uses a token once: the first valid use succeeds, every later one is refused. */
  async redeem(kind: TokenKind, token: string, now: number): Promise<RedeemResult> {
    const hash = await sha256Hex(token);
    const rows = this.sql
      .exec<{ rowid: number; token_hash: string; expires_at: number; state: string }>(
        "SELECT rowid, token_hash, expires_at, state FROM tokens WHERE kind = ?",
        kind,
      )
      .toArray();
    const match = rows.find((row) => timingSafeEqualText(row.token_hash, hash));
    if (!match) return { ok: false, reason: "invalid" };
    if (match.state === "revoked") return { ok: false, reason: "revoked" };
    if (match.state === "used") return { ok: false, reason: "used" };
    if (match.expires_at <= now) return { ok: false, reason: "expired" };
    this.sql.exec("UPDATE tokens SET state = 'used' WHERE rowid = ?", match.rowid);
    return { ok: true };
  }

  /** Housekeeping: forgets tokens and generation records that can no longer matter. */
  purge(now: number, keepMs: number): void {
    this.sql.exec("DELETE FROM tokens WHERE expires_at <= ?", now - keepMs);
    this.sql.exec("DELETE FROM generations WHERE at <= ?", now - keepMs);
  }

  /**
   * Runs `work` (a function of the caller's, called back over RPC) once every earlier work under the same
   * `name` for this user has ended, wherever in the world it was asked for: one at a time per name. The
   * object answers other calls meanwhile; work under another name does not wait. `work` answers a
   * value, not a thrown error of its own class (an error loses its class on the way back).
   */
  async exclusive(name: string, work: () => Promise<unknown>): Promise<unknown> {
    const earlier = this.queues.get(name) ?? Promise.resolve();
    const run = earlier.then(() => work());
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(name, done);
    try {
      return await run;
    } finally {
      if (this.queues.get(name) === done) this.queues.delete(name);
    }
  }

  /** Removes everything (user deleted or anonymised). */
  clear(): void {
    this.sql.exec("DELETE FROM tokens");
    this.sql.exec("DELETE FROM generations");
  }
}

/** The object holding one user's tokens. */
export const userTokens = (ns: DurableObjectNamespace<UserTokens>, userId: number) =>
  ns.get(ns.idFromName(`user:${userId}`));
