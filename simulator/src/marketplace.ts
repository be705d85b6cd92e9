import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import { AuthorizationServer } from "./authorization";
import { type Portal, portalOf, type SimulatorEnv } from "./env";
import { MarketplaceListing } from "./listing";
import { reviewListing } from "./review";

const LISTING_DAYS = 30;
const FLAKY_FAILURES = 2;

/**
 * What the marketplace does to the answers of an account's writes (create, update, delete, feature)
 * while a fault is switched on, always after the write is committed: answers 503, answers 422, or
 * loses the answer (the request fails as a dropped connection would).
 */
export const FAULT_MODES = ["commit-then-503", "commit-then-422", "lost-answer"] as const;
type FaultMode = (typeof FAULT_MODES)[number];

type Json = Record<string, unknown>;

/** Thrown after a commit to drop the answer: the caller's request fails as on a broken connection. */
class LostAnswer extends Error {
  constructor() {
    super("the connection was lost before the answer");
  }
}

/**
 * One simulated marketplace per portal, speaking the HTTP API the API's gateway uses (an OAuth
 * authorization server, listings, features, bids, statistics). It behaves like a strict marketplace:
 * a listing is reviewed against its own published catalogue and refused with a reason naming the
 * field. Deterministic triggers: a title with `[reject]` is refused, one with `[flaky]` fails
 * transiently on its first two attempts. State lives in the object's SQLite storage.
 */
export class MarketplaceSimulator extends DurableObject<SimulatorEnv> {
  private readonly sql: SqlStorage;
  private readonly app = new Hono();
  private readonly authorization: AuthorizationServer;
  /** Accounts whose placements are held before they commit (a slow marketplace), and how each is let go. */
  private readonly held = new Map<number, { released: Promise<void>; release: () => void }>();

  constructor(ctx: DurableObjectState, env: SimulatorEnv) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.authorization = new AuthorizationServer(this.sql, env);
    // A lost answer leaves as a failed request, not as an answer.
    this.app.onError((error, c) => {
      if (error instanceof LostAnswer) throw error;
      return c.json({ error: "internal error" }, 500);
    });
    // A listing keeps what arrived (`payload`: the last body sent for it, as JSON); one feature purchase
    // per reference.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS listings (id INTEGER PRIMARY KEY AUTOINCREMENT, account INTEGER, external_ref TEXT,
        title TEXT, price INTEGER, online INTEGER, start INTEGER, close INTEGER, payload TEXT);
      CREATE INDEX IF NOT EXISTS listings_ref ON listings (external_ref, account);
      CREATE TABLE IF NOT EXISTS attempts (ref TEXT PRIMARY KEY, n INTEGER);
      CREATE TABLE IF NOT EXISTS features (listing INTEGER, feature TEXT, at INTEGER, reference TEXT);
      CREATE UNIQUE INDEX IF NOT EXISTS features_reference ON features (reference);
      CREATE TABLE IF NOT EXISTS faults (account INTEGER PRIMARY KEY, mode TEXT NOT NULL, remaining INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS outage (id INTEGER PRIMARY KEY CHECK (id = 1));
      CREATE TABLE IF NOT EXISTS writes (account INTEGER NOT NULL, kind TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (account, kind));`);
    this.routes();
  }

  override fetch(request: Request): Response | Promise<Response> {
    return this.app.fetch(request);
  }

  /**
   * What one account holds, for tests and the benchmark to count what reached the marketplace
   * (listings, live ones, references held by more than one listing, feature purchases).
   */
  private accountSummary(account: number) {
    const one = (query: string) => this.sql.exec<{ n: number }>(query, account).one().n;
    return {
      listings: one("SELECT count(*) AS n FROM listings WHERE account = ?"),
      online: one("SELECT count(*) AS n FROM listings WHERE account = ? AND online = 1"),
      duplicateRefs: one(
        "SELECT count(*) AS n FROM (SELECT external_ref FROM listings WHERE account = ? GROUP BY external_ref HAVING count(*) > 1)",
      ),
      features: one("SELECT count(*) AS n FROM features f JOIN listings l ON l.id = f.listing WHERE l.account = ?"),
      creates: one("SELECT coalesce(sum(n), 0) AS n FROM writes WHERE account = ? AND kind = 'create'"),
      updates: one("SELECT coalesce(sum(n), 0) AS n FROM writes WHERE account = ? AND kind = 'update'"),
    };
  }

  /** Counts an accepted write of the account: every call a marketplace bills or rate-limits. */
  private counted(account: number, kind: "create" | "update") {
    this.sql.exec(
      "INSERT INTO writes VALUES (?, ?, 1) ON CONFLICT (account, kind) DO UPDATE SET n = n + 1",
      account,
      kind,
    );
  }

  /** The listings of one account with what they hold. */
  private listingsOf(account: number) {
    return this.sql
      .exec<{ id: number; external_ref: string; title: string; online: number; payload: string | null }>(
        "SELECT id, external_ref, title, online, payload FROM listings WHERE account = ? ORDER BY id",
        account,
      )
      .toArray()
      .map((row) => ({
        remoteAdId: row.id,
        externalRef: row.external_ref,
        title: row.title,
        online: row.online === 1,
        listing: row.payload === null ? null : (JSON.parse(row.payload) as MarketplaceListing),
      }));
  }

  private account(request: Request): number | null {
    return this.authorization.accountOf(request);
  }

  /**
   * The listing in a create or update body, or the refusal (422 naming the field) a strict marketplace
   * answers for it.
   */
  private review(portal: Portal, body: unknown): MarketplaceListing | Response {
    const parsed = MarketplaceListing.safeParse(body);
    if (!parsed.success) {
      const [issue] = parsed.error.issues;
      return Response.json({ error: `${issue?.path.join(".") || "listing"}: ${issue?.message}` }, { status: 422 });
    }
    const problem = reviewListing(portal, parsed.data);
    return problem ? Response.json({ error: problem }, { status: 422 }) : parsed.data;
  }

  /** The operator switched the listing API off: every account call fails as a marketplace that is down. */
  private isDown(): boolean {
    return this.sql.exec("SELECT 1 FROM outage").toArray().length > 0;
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

  /**
   * The answer an account's committed write gets: its own, unless a fault is switched on for the
   * account, which then takes its place (and counts down).
   */
  private answerAfterCommit(account: number, answer: Response): Response {
    const fault = this.sql
      .exec<{ mode: FaultMode; remaining: number }>("SELECT mode, remaining FROM faults WHERE account = ?", account)
      .toArray()[0];
    if (!fault) return answer;
    this.sql.exec(
      fault.remaining > 1
        ? "UPDATE faults SET remaining = remaining - 1 WHERE account = ?"
        : "DELETE FROM faults WHERE account = ?",
      account,
    );
    switch (fault.mode) {
      case "commit-then-503":
        return Response.json({ error: "temporarily unavailable" }, { status: 503 });
      case "commit-then-422":
        return Response.json({ error: "could not be processed" }, { status: 422 });
      case "lost-answer":
        throw new LostAnswer();
    }
  }

  /** Whether the listing exists and belongs to the account (another account's listing is not found). */
  private owns(account: number, id: number): boolean {
    return this.sql.exec("SELECT 1 FROM listings WHERE id = ? AND account = ?", id, account).toArray().length > 0;
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

  /** Keeps what arrived: the listing as sent, and the columns bids are derived from. */
  private store(id: number, listing: MarketplaceListing): void {
    this.sql.exec(
      "UPDATE listings SET title = ?, price = ?, payload = ? WHERE id = ?",
      listing.title,
      listing.price.price ?? 0,
      JSON.stringify(listing),
      id,
    );
  }

  private routes(): void {
    this.authorization.routes(this.app);
    const app = this.app.basePath("/:portal");
    // During an outage the listing API (not its authorization server, nor the operator's control) is down.
    app.use("*", async (c, next) => {
      const [, , section] = new URL(c.req.url).pathname.split("/");
      if (section !== "control" && section !== "oauth" && this.isDown())
        return c.json({ error: "service unavailable" }, 503);
      await next();
    });
    // Verify: the review a create makes, and nothing kept (eBay's VerifyAddItem): 200 when the listing
    // would be taken, else the create's own refusal.
    app.post("/listings/verify", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const body = await c.req.json().catch(() => null);
      if (String(body?.title ?? "").includes("[reject]")) return c.json({ error: "rejected by portal" }, 422);
      const listing = this.review(portalOf(c), body);
      if (listing instanceof Response) return listing;
      return c.json({ verified: true });
    });
    app.post("/listings", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const body = await c.req.json().catch(() => null);
      const triggered = this.trigger(`create:${body?.externalRef}`, String(body?.title ?? ""));
      if (triggered) return triggered;
      const listing = this.review(portalOf(c), body);
      if (listing instanceof Response) return listing;
      await this.held.get(account)?.released;
      this.counted(account, "create");
      const now = Date.now();
      const existing = this.sql
        .exec<{ id: number }>(
          "SELECT id FROM listings WHERE external_ref = ? AND account = ?",
          listing.externalRef,
          account,
        )
        .toArray()[0];
      if (existing) {
        // Creating the same listing twice (a retried request) answers the first one.
        this.store(existing.id, listing);
        this.sql.exec("UPDATE listings SET online = 1 WHERE id = ?", existing.id);
        return this.answerAfterCommit(account, c.json(this.listingView(existing.id), 200));
      }
      this.sql.exec(
        "INSERT INTO listings (account, external_ref, title, price, online, start, close) VALUES (?, ?, ?, ?, 1, ?, ?)",
        account,
        listing.externalRef,
        listing.title,
        listing.price.price ?? 0,
        now,
        now + LISTING_DAYS * 86_400_000,
      );
      const id = this.sql.exec<{ id: number }>("SELECT last_insert_rowid() AS id").one().id;
      this.store(id, listing);
      return this.answerAfterCommit(account, c.json(this.listingView(id), 201));
    });
    // Control routes for tests and scripts (the benchmark), the operator's only: HTTP Basic with the
    // portal's registered client credentials.
    const control = app.basePath("/control");
    control.use(async (c, next) => {
      if (!(await this.authorization.isOperator(c)))
        return c.json({ error: "invalid_client" }, 401, { "WWW-Authenticate": 'Basic realm="control"' });
      await next();
    });
    control.get("/accounts/:account", (c) => c.json(this.accountSummary(Number(c.req.param("account")))));
    control.get("/accounts/:account/listings", (c) =>
      c.json({ listings: this.listingsOf(Number(c.req.param("account"))) }),
    );
    // Switches a fault on for the account's next `times` writes (mode null switches it off).
    control.post("/accounts/:account/faults", async (c) => {
      const account = Number(c.req.param("account"));
      const body = (await c.req.json().catch(() => null)) as { mode?: unknown; times?: unknown } | null;
      const mode = body?.mode ?? null;
      const times = body?.times ?? 1;
      if (mode !== null && !(FAULT_MODES as readonly unknown[]).includes(mode))
        return c.json({ error: `mode: one of ${FAULT_MODES.join(", ")}, or null` }, 400);
      if (typeof times !== "number" || !Number.isInteger(times) || times < 1)
        return c.json({ error: "times: a whole number of at least 1" }, 400);
      this.sql.exec("DELETE FROM faults WHERE account = ?", account);
      if (mode !== null) this.sql.exec("INSERT INTO faults VALUES (?, ?, ?)", account, mode, times);
      return c.body(null, 204);
    });
    // Holds the account's placements before they commit (`holding: true`), as a slow marketplace does,
    // until they are let go (`holding: false`).
    control.post("/accounts/:account/hold", async (c) => {
      const account = Number(c.req.param("account"));
      const body = (await c.req.json().catch(() => null)) as { holding?: unknown } | null;
      if (typeof body?.holding !== "boolean") return c.json({ error: "holding: true or false" }, 400);
      const hold = this.held.get(account);
      if (body.holding && !hold) {
        let release = () => {};
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        this.held.set(account, { released, release });
      }
      if (!body.holding && hold) {
        this.held.delete(account);
        hold.release();
      }
      return c.body(null, 204);
    });
    // Takes the listing API down (`down: true`) or brings it back.
    control.post("/outage", async (c) => {
      const body = (await c.req.json().catch(() => null)) as { down?: unknown } | null;
      if (typeof body?.down !== "boolean") return c.json({ error: "down: true or false" }, 400);
      this.sql.exec(body.down ? "INSERT OR IGNORE INTO outage VALUES (1)" : "DELETE FROM outage");
      return c.body(null, 204);
    });
    // Ends a listing as its close date would: offline, closed now.
    control.post("/listings/:id/close", (c) => {
      this.sql.exec("UPDATE listings SET online = 0, close = ? WHERE id = ?", Date.now(), Number(c.req.param("id")));
      return c.body(null, 204);
    });
    // Ends every access token now, so clients must refresh (exercises token refresh).
    control.post("/expire-tokens", (c) => {
      this.authorization.expireTokens();
      return c.body(null, 204);
    });
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
      const body = await c.req.json().catch(() => null);
      const triggered = this.trigger(`update:${id}`, String(body?.title ?? ""));
      if (triggered) return triggered;
      if (!this.owns(account, id)) return c.json({ error: "listing not found" }, 404);
      const listing = this.review(portalOf(c), body);
      if (listing instanceof Response) return listing;
      this.counted(account, "update");
      this.store(id, listing);
      return this.answerAfterCommit(account, c.json(this.listingView(id)));
    });
    app.delete("/listings/:id", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      if (!this.owns(account, id)) return c.json({ error: "listing not found" }, 404);
      this.sql.exec("UPDATE listings SET online = 0 WHERE id = ?", id);
      return this.answerAfterCommit(account, c.json({ remoteAdId: id, online: false }));
    });
    app.get("/listings/:id", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      if (!this.owns(account, id)) return c.json({ error: "listing not found" }, 404);
      const { payload } = this.sql
        .exec<{ payload: string | null }>("SELECT payload FROM listings WHERE id = ?", id)
        .one();
      return c.json({ ...this.listingView(id), listing: payload === null ? null : JSON.parse(payload) });
    });
    app.post("/listings/:id/features", async (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      const body = (await c.req.json().catch(() => null)) as { feature?: string; reference?: string } | null;
      if (typeof body?.feature !== "string") return c.json({ error: "feature: required" }, 400);
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
      return this.answerAfterCommit(account, c.json({ remoteAdId: id, feature: body.feature, active: true }));
    });
    // The purchases of a listing, or the one made under a reference (`?reference=`): how a client whose
    // answer was lost learns whether its purchase was made.
    app.get("/listings/:id/features", (c) => {
      const account = this.account(c.req.raw);
      if (account === null) return c.json({ error: "invalid_token" }, 401);
      const id = Number(c.req.param("id"));
      if (!this.owns(account, id)) return c.json({ error: "listing not found" }, 404);
      const reference = c.req.query("reference");
      const features = this.sql
        .exec<{ feature: string; reference: string | null; at: number }>(
          `SELECT feature, reference, at FROM features WHERE listing = ?${reference === undefined ? "" : " AND reference = ?"} ORDER BY at`,
          ...(reference === undefined ? [id] : [id, reference]),
        )
        .toArray();
      return c.json({ features });
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
