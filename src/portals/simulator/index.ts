import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import type { Env } from "../env";
import { randomToken } from "../lib/crypto";

const ACCESS_TTL_S = 3600;
const LISTING_DAYS = 30;
const FLAKY_FAILURES = 2;

type Json = Record<string, unknown>;

/**
 * The bundled marketplace: one object per portal, speaking the HTTP API the PortalGateway uses (OAuth
 * authorization code with expiring access and refresh tokens, listings, features, bids, statistics).
 * Deterministic triggers: a title with `[reject]` is refused, one with `[flaky]` fails transiently on
 * its first two attempts. State lives in the object's SQLite storage.
 */
export class MarketplaceSimulator extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly app = new Hono();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS codes (code TEXT PRIMARY KEY, account INTEGER, expires INTEGER);
      CREATE TABLE IF NOT EXISTS tokens (token TEXT PRIMARY KEY, kind TEXT, account INTEGER, expires INTEGER);
      CREATE TABLE IF NOT EXISTS listings (id INTEGER PRIMARY KEY AUTOINCREMENT, account INTEGER, external_ref TEXT,
        title TEXT, price INTEGER, online INTEGER, start INTEGER, close INTEGER);
      CREATE TABLE IF NOT EXISTS attempts (ref TEXT PRIMARY KEY, n INTEGER);
      CREATE TABLE IF NOT EXISTS features (listing INTEGER, feature TEXT, at INTEGER, reference TEXT);`);
    // Objects made before references existed get the column; one purchase per reference.
    if (
      !this.sql
        .exec("PRAGMA table_info(features)")
        .toArray()
        .some((c) => c.name === "reference")
    )
      this.sql.exec("ALTER TABLE features ADD COLUMN reference TEXT");
    this.sql.exec("CREATE UNIQUE INDEX IF NOT EXISTS features_reference ON features (reference)");
    this.sql.exec("CREATE INDEX IF NOT EXISTS listings_ref ON listings (external_ref, account)");
    this.routes();
  }

  override fetch(request: Request): Response | Promise<Response> {
    return this.app.fetch(request);
  }

  /** Simulator control: ends every access token now, so clients must refresh (used to exercise token refresh). */
  expireTokens(): void {
    this.sql.exec("UPDATE tokens SET expires = 0 WHERE kind = 'access'");
  }

  /**
   * Simulator control: what one account holds, for tests and the benchmark to count what reached the
   * marketplace (listings, live ones, references held by more than one listing, feature purchases).
   */
  accountSummary(account: number) {
    const one = (query: string) => this.sql.exec<{ n: number }>(query, account).one().n;
    return {
      listings: one("SELECT count(*) AS n FROM listings WHERE account = ?"),
      online: one("SELECT count(*) AS n FROM listings WHERE account = ? AND online = 1"),
      duplicateRefs: one(
        "SELECT count(*) AS n FROM (SELECT external_ref FROM listings WHERE account = ? GROUP BY external_ref HAVING count(*) > 1)",
      ),
      features: one("SELECT count(*) AS n FROM features f JOIN listings l ON l.id = f.listing WHERE l.account = ?"),
    };
  }

  /** Simulator control: the listings of one account with what they hold. */
  listingsOf(account: number) {
    return this.sql
      .exec<{ id: number; external_ref: string; title: string; online: number }>(
        "SELECT id, external_ref, title, online FROM listings WHERE account = ? ORDER BY id",
        account,
      )
      .toArray()
      .map((row) => ({
        remoteAdId: row.id,
        externalRef: row.external_ref,
        title: row.title,
        online: row.online === 1,
      }));
  }

  private account(request: Request): number | null {
    const token = /^Bearer (.+)$/.exec(request.headers.get("Authorization") ?? "")?.[1];
    if (!token) return null;
    const row = this.sql
      .exec<{ account: number; expires: number }>(
        "SELECT account, expires FROM tokens WHERE token = ? AND kind = 'access'",
        token,
      )
      .toArray()[0];
    return row && row.expires > Date.now() ? row.account : null;
  }

  private issueTokens(account: number): Json {
    const access = randomToken(24);
    const refresh = randomToken(24);
    this.sql.exec("INSERT INTO tokens VALUES (?, 'access', ?, ?)", access, account, Date.now() + ACCESS_TTL_S * 1000);
    this.sql.exec("INSERT INTO tokens VALUES (?, 'refresh', ?, ?)", refresh, account, Number.MAX_SAFE_INTEGER);
    return {
      access_token: access,
      refresh_token: refresh,
      expires_in: ACCESS_TTL_S,
      scope: ["listings", "features", "bids", "statistics"],
      account: { id: account, email: `account-${account}@marketplace.example` },
    };
  }

  /** A title with `[reject]` is refused; `[flaky]` fails the first two attempts of the same listing. */
  private trigger(ref: string, title: string): Response | null {
    if (title.includes("[reject]")) return Response.json({ error: "rejected by portal" }, { status: 422 });
    if (title.includes("[flaky]")) {
      this.sql.exec("INSERT INTO attempts VALUES (?, 1) ON CONFLICT (ref) DO UPDATE SET n = n + 1", ref);
      const n = this.sql.exec<{ n: number }>("SELECT n FROM attempts WHERE ref = ?", ref).one().n;
      if (n <= FLAKY_FAILURES) return Response.json({ error: "temporarily unavailable" }, { status: 503 });
    }
    return null;
  }

  private listingView(id: number): Json {
    const row = this.sql
      .exec<{ id: number; online: number; start: number; close: number }>(
        "SELECT id, online, start, close FROM listings WHERE id = ?",
        id,
      )
      .one();
    return { remoteAdId: row.id, online: row.online === 1, startDate: row.start, closeDate: row.close };
  }

  private routes(): void {
    const app = this.app.basePath("/:portal");
    app.get("/oauth/authorize", (c) => {
      const redirect = c.req.query("redirect_uri");
      const account = Number(c.req.query("account") ?? 0) || 1000 + Math.floor(Math.random() * 1000);
      if (!redirect) return c.json({ error: "redirect_uri is required" }, 400);
      const code = randomToken(16);
      this.sql.exec("INSERT INTO codes VALUES (?, ?, ?)", code, account, Date.now() + 600_000);
      const target = new URL(redirect);
      target.searchParams.set("code", code);
      target.searchParams.set("state", c.req.query("state") ?? "");
      return c.redirect(target.toString(), 302);
    });
    app.post("/oauth/token", async (c) => {
      const body = (await c.req.json().catch(() => ({}))) as Json;
      if (body.grant_type === "authorization_code") {
        const row = this.sql
          .exec<{ account: number; expires: number }>(
            "SELECT account, expires FROM codes WHERE code = ?",
            String(body.code),
          )
          .toArray()[0];
        this.sql.exec("DELETE FROM codes WHERE code = ?", String(body.code));
        if (!row || row.expires < Date.now()) return c.json({ error: "invalid_grant" }, 400);
        return c.json(this.issueTokens(row.account));
      }
      if (body.grant_type === "refresh_token") {
        const row = this.sql
          .exec<{ account: number }>(
            "SELECT account FROM tokens WHERE token = ? AND kind = 'refresh'",
            String(body.refresh_token),
          )
          .toArray()[0];
        if (!row) return c.json({ error: "invalid_grant" }, 400);
        this.sql.exec("DELETE FROM tokens WHERE token = ?", String(body.refresh_token));
        return c.json(this.issueTokens(row.account));
      }
      return c.json({ error: "unsupported_grant_type" }, 400);
    });
    app.post("/oauth/revoke", async (c) => {
      const body = (await c.req.json().catch(() => ({}))) as Json;
      this.sql.exec("DELETE FROM tokens WHERE token = ?", String(body.token ?? ""));
      return c.json({ revoked: true });
    });

    app.post("/listings", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const body = (await c.req.json()) as { externalRef: string; title: string; price?: number };
      const refused = this.trigger(`create:${body.externalRef}`, body.title);
      if (refused) return refused;
      const now = Date.now();
      const existing = this.sql
        .exec<{ id: number }>(
          "SELECT id FROM listings WHERE external_ref = ? AND account = ?",
          body.externalRef,
          account,
        )
        .toArray()[0];
      if (existing) {
        // Creating the same listing twice (a retried request) answers the first one.
        this.sql.exec(
          "UPDATE listings SET title = ?, price = ?, online = 1 WHERE id = ?",
          body.title,
          body.price ?? 0,
          existing.id,
        );
        return c.json(this.listingView(existing.id), 200);
      }
      this.sql.exec(
        "INSERT INTO listings (account, external_ref, title, price, online, start, close) VALUES (?, ?, ?, ?, 1, ?, ?)",
        account,
        body.externalRef,
        body.title,
        body.price ?? 0,
        now,
        now + LISTING_DAYS * 86_400_000,
      );
      const id = this.sql.exec<{ id: number }>("SELECT last_insert_rowid() AS id").one().id;
      return c.json(this.listingView(id), 201);
    });
    // Control route for scripts (the benchmark): the account summary, as `accountSummary`.
    app.get("/control/accounts/:account", (c) => c.json(this.accountSummary(Number(c.req.param("account")))));
    app.get("/listings", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const ids = this.sql
        .exec<{ id: number }>(
          "SELECT id FROM listings WHERE external_ref = ? AND account = ?",
          c.req.query("externalRef") ?? "",
          account,
        )
        .toArray();
      return c.json({ listings: ids.map(({ id }) => this.listingView(id)) });
    });
    app.put("/listings/:id", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      const body = (await c.req.json()) as { title: string; price?: number };
      const refused = this.trigger(`update:${id}`, body.title);
      if (refused) return refused;
      const changed = this.sql.exec(
        "UPDATE listings SET title = ?, price = ? WHERE id = ? AND account = ?",
        body.title,
        body.price ?? 0,
        id,
        account,
      );
      if (changed.rowsWritten === 0) return c.json({ error: "listing not found" }, 404);
      return c.json(this.listingView(id));
    });
    app.delete("/listings/:id", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      this.sql.exec("UPDATE listings SET online = 0 WHERE id = ? AND account = ?", id, account);
      return c.json({ remoteAdId: id, online: false });
    });
    app.get("/listings/:id", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      const found =
        this.sql.exec("SELECT 1 FROM listings WHERE id = ? AND account = ?", id, account).toArray().length > 0;
      return found ? c.json(this.listingView(id)) : c.json({ error: "listing not found" }, 404);
    });
    app.post("/listings/:id/features", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      const body = (await c.req.json()) as { feature: string; reference?: string };
      const online = this.sql
        .exec<{ online: number }>("SELECT online FROM listings WHERE id = ? AND account = ?", id, account)
        .toArray()[0];
      if (!online?.online) return c.json({ error: "listing is not online" }, 422);
      this.sql.exec(
        "INSERT OR IGNORE INTO features (listing, feature, at, reference) VALUES (?, ?, ?, ?)",
        id,
        body.feature,
        Date.now(),
        body.reference ?? null,
      );
      return c.json({ remoteAdId: id, feature: body.feature, active: true });
    });
    // Bids: every online listing with a price has one bid per started day, at 90% of the asking price.
    app.get("/bids", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const listings = this.sql
        .exec<{ id: number; price: number; start: number }>(
          "SELECT id, price, start FROM listings WHERE account = ? AND online = 1 AND price > 0",
          account,
        )
        .toArray();
      const bids = listings.flatMap((l) => {
        const days = Math.max(1, Math.ceil((Date.now() - l.start) / 86_400_000));
        return Array.from({ length: Math.min(days, 7) }, (_, day) => ({
          bidId: l.id * 100 + day,
          remoteAdId: l.id,
          amount: Math.round(l.price * 0.9),
          name: `Bieder ${day + 1}`,
          message: "Is dit nog beschikbaar?",
          placedAt: new Date(l.start + day * 86_400_000).toISOString(),
        }));
      });
      return c.json({ bids });
    });
    // Statistics of a day: numbers derived from the listing id and the date, the same on every call.
    app.get("/statistics", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const date = c.req.query("date") ?? new Date().toISOString().slice(0, 10);
      const seed = Number(date.replaceAll("-", "")) % 97;
      const listings = this.sql
        .exec<{ id: number }>("SELECT id FROM listings WHERE account = ? AND online = 1", account)
        .toArray();
      return c.json({
        date,
        statistics: listings.map(({ id }) => ({
          remoteAdId: id,
          views: 20 + ((id * 7 + seed) % 50),
          asqs: (id + seed) % 4,
          bids: (id + seed) % 3,
          url: (id * 3 + seed) % 6,
          phone: (id + seed) % 2,
          favorites: (id * 5 + seed) % 9,
        })),
      });
    });
  }
}
