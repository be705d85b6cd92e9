import type { Context, Hono } from "hono";
import { base64url, newToken, sameSecret } from "./crypto";
import { type Portal, portalOf, registeredClient, type SimulatorEnv } from "./env";
import { consentPage, PAGE_HEADERS, refusalPage, signupPage } from "./pages";

const ACCESS_TTL_S = 3600;
const CODE_TTL_MS = 60_000;
const DEMO_ACCOUNT = 1000;
const LOGIN_FAILURES_PER_MINUTE = 5;
const PBKDF2_ITERATIONS = 100_000;
const SCOPE = "listings features bids statistics";

/** The authorization request's parameters, carried from the consent page's query to its form. */
const REQUEST_PARAMS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "state",
  "code_challenge",
  "code_challenge_method",
];

/**
 * The header through which the API's forwarding route names the origin these pages are served on:
 * the only redirect URI registered for the API's client is `<that origin>/oauth/callback/<portal>`.
 */
const SERVED_ORIGIN_HEADER = "X-Simulator-Origin";
const registeredRedirect = (origin: string, portal: Portal) => `${origin}/oauth/callback/${portal}`;

async function passwordHash(password: string, salt: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: new TextEncoder().encode(salt), iterations: PBKDF2_ITERATIONS },
    key,
    256,
  );
  return base64url(bits);
}

const s256 = async (verifier: string) =>
  base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));

type Refusal = { page: string } | { redirect: string };

/** The body as a form, or null when it is not one (a malformed request). */
const formOf = (c: Context): Promise<FormData | null> => c.req.formData().catch(() => null);

/** RFC 6749's answer to a request it cannot read. */
const invalidRequest = (c: Context) =>
  c.json(
    { error: "invalid_request", error_description: "the body must be a form (application/x-www-form-urlencoded)" },
    400,
  );

/**
 * The simulator's OAuth 2.0 authorization server (RFC 6749 authorization code grant with PKCE, RFC
 * 7636, and token revocation, RFC 7009): a consent page where the account holder signs in, codes
 * that live a minute and work once, redirects only to the redirect URIs registered for our client, and
 * a token endpoint that authenticates the client. Accounts: `demo` (password SIMULATOR_DEMO_PASSWORD,
 * "demo" when unset) and any created from the consent page.
 */
export class AuthorizationServer {
  constructor(
    private readonly sql: SqlStorage,
    private readonly env: SimulatorEnv,
  ) {
    sql.exec(`CREATE TABLE IF NOT EXISTS accounts (id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT UNIQUE,
        password_hash TEXT, salt TEXT);
      CREATE TABLE IF NOT EXISTS grants (code TEXT PRIMARY KEY, account INTEGER, client_id TEXT, redirect_uri TEXT,
        challenge TEXT, expires INTEGER);
      CREATE TABLE IF NOT EXISTS tokens (token TEXT PRIMARY KEY, kind TEXT, account INTEGER, expires INTEGER);
      CREATE TABLE IF NOT EXISTS login_failures (ip TEXT, at INTEGER);`);
    // The demo account's password is the variable itself, so changing it needs no migration.
    sql.exec("INSERT OR IGNORE INTO accounts (id, username) VALUES (?, 'demo')", DEMO_ACCOUNT);
  }

  /** The account an access token belongs to, or null when it is unknown or expired. */
  accountOf(request: Request): number | null {
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

  /** Ends every access token now, so clients must refresh. */
  expireTokens(): void {
    this.sql.exec("UPDATE tokens SET expires = 0 WHERE kind = 'access'");
  }

  routes(app: Hono): void {
    app.get("/:portal/oauth/authorize", async (c) => {
      const params = this.requestParams(new URL(c.req.url).searchParams);
      const refused = this.checkRequest(c, params);
      if (refused) return this.answerRefusal(c, refused);
      return c.html(this.consentHtml(c, params), 200, PAGE_HEADERS);
    });
    app.post("/:portal/oauth/authorize", async (c) => {
      const form = await formOf(c);
      if (!form) return invalidRequest(c);
      const params = this.requestParams(form);
      const refused = this.checkRequest(c, params);
      if (refused) return this.answerRefusal(c, refused);
      const ip = c.req.header("CF-Connecting-IP") ?? "unknown";
      if (this.recentFailures(ip) >= LOGIN_FAILURES_PER_MINUTE) {
        return c.html(this.consentHtml(c, params, "Too many failed sign-ins: wait a minute."), 429, {
          ...PAGE_HEADERS,
          "Retry-After": "60",
        });
      }
      const account = await this.signIn(String(form.get("username") ?? ""), String(form.get("password") ?? ""));
      if (account === null) {
        this.sql.exec("INSERT INTO login_failures VALUES (?, ?)", ip, Date.now());
        return c.html(this.consentHtml(c, params, "Wrong username or password."), 401, PAGE_HEADERS);
      }
      return c.redirect(this.grant(account, params), 302);
    });
    app.get("/:portal/signup", (c) => {
      const params = this.requestParams(new URL(c.req.url).searchParams);
      const refused = this.checkRequest(c, params);
      if (refused) return this.answerRefusal(c, refused);
      return c.html(
        signupPage({ portal: c.req.param("portal"), action: this.publicPath(c, "signup"), params }),
        200,
        PAGE_HEADERS,
      );
    });
    app.post("/:portal/signup", async (c) => {
      const form = await formOf(c);
      if (!form) return invalidRequest(c);
      const params = this.requestParams(form);
      const refused = this.checkRequest(c, params);
      if (refused) return this.answerRefusal(c, refused);
      const username = String(form.get("username") ?? "").trim();
      const password = String(form.get("password") ?? "");
      const problem = !/^[A-Za-z0-9._-]{3,40}$/.test(username)
        ? "A username is 3-40 letters, digits, dots, dashes or underscores."
        : password.length < 4
          ? "A password has at least 4 characters."
          : this.sql.exec("SELECT 1 FROM accounts WHERE username = ?", username).toArray().length > 0
            ? "That username is taken."
            : null;
      if (problem) {
        const action = this.publicPath(c, "signup");
        return c.html(signupPage({ portal: c.req.param("portal"), action, params, error: problem }), 400, PAGE_HEADERS);
      }
      const salt = newToken(16);
      this.sql.exec(
        "INSERT INTO accounts (username, password_hash, salt) VALUES (?, ?, ?)",
        username,
        await passwordHash(password, salt),
        salt,
      );
      const account = this.sql.exec<{ id: number }>("SELECT last_insert_rowid() AS id").one().id;
      return c.redirect(this.grant(account, params), 302);
    });
    app.post("/:portal/oauth/token", async (c) => {
      const form = await formOf(c);
      if (!form) return invalidRequest(c);
      if (!(await this.authenticatesClient(c, form))) {
        return c.json({ error: "invalid_client" }, 401, { "WWW-Authenticate": 'Basic realm="token"' });
      }
      const grantType = form.get("grant_type");
      if (grantType === "authorization_code") return this.exchangeCode(c, form);
      if (grantType === "refresh_token") {
        const refreshToken = String(form.get("refresh_token") ?? "");
        const row = this.sql
          .exec<{ account: number }>("SELECT account FROM tokens WHERE token = ? AND kind = 'refresh'", refreshToken)
          .toArray()[0];
        if (!row) return c.json({ error: "invalid_grant" }, 400);
        this.sql.exec("DELETE FROM tokens WHERE token = ?", refreshToken);
        return c.json(this.issueTokens(row.account), 200, { "Cache-Control": "no-store" });
      }
      return c.json({ error: "unsupported_grant_type" }, 400);
    });
    app.post("/:portal/oauth/revoke", async (c) => {
      const form = await formOf(c);
      if (!form) return invalidRequest(c);
      if (!(await this.authenticatesClient(c, form))) return c.json({ error: "invalid_client" }, 401);
      this.sql.exec("DELETE FROM tokens WHERE token = ?", String(form.get("token") ?? ""));
      return c.body(null, 200);
    });
  }

  private requestParams(source: URLSearchParams | FormData): Record<string, string> {
    const params: Record<string, string> = {};
    for (const name of REQUEST_PARAMS) {
      const value = source.get(name);
      if (typeof value === "string") params[name] = value;
    }
    return params;
  }

  /** `/simulator/<portal>/<rest>` as the browser sees it (the forwarding route strips `/simulator`). */
  private publicPath(c: Context, rest: string): string {
    return `/simulator/${c.req.param("portal")}/${rest}`;
  }

  /**
   * Which requests are answered with a page and never redirected (an unknown client or a redirect URI
   * not registered for it: RFC 6749 4.1.2.1), and which are sent back to the client with an error.
   */
  private checkRequest(c: Context, params: Record<string, string>): Refusal | null {
    const portal = portalOf(c);
    const client = registeredClient(this.env, portal);
    if (params.client_id !== client.clientId) return { page: "client_id: unknown client" };
    const origin = c.req.header(SERVED_ORIGIN_HEADER);
    if (!origin || params.redirect_uri !== registeredRedirect(origin, portal)) {
      return { page: "redirect_uri: not registered for this client" };
    }
    const back = (error: string, description: string) => {
      const target = new URL(params.redirect_uri as string);
      target.searchParams.set("error", error);
      target.searchParams.set("error_description", description);
      if (params.state) target.searchParams.set("state", params.state);
      return { redirect: target.toString() };
    };
    if (params.response_type !== "code") return back("unsupported_response_type", "response_type must be code");
    if (!params.code_challenge || params.code_challenge_method !== "S256") {
      return back("invalid_request", "PKCE is required: code_challenge with code_challenge_method S256");
    }
    return null;
  }

  private answerRefusal(c: Context, refusal: Refusal): Response | Promise<Response> {
    if ("redirect" in refusal) return c.redirect(refusal.redirect, 302);
    return c.html(refusalPage(c.req.param("portal") ?? "", refusal.page), 400, PAGE_HEADERS);
  }

  private consentHtml(c: Context, params: Record<string, string>, error?: string) {
    const signupUrl = `${this.publicPath(c, "signup")}?${new URLSearchParams(params)}`;
    return consentPage({
      portal: c.req.param("portal") ?? "",
      action: this.publicPath(c, "oauth/authorize"),
      signupUrl,
      params,
      ...(error ? { error } : {}),
    });
  }

  private recentFailures(ip: string): number {
    this.sql.exec("DELETE FROM login_failures WHERE at < ?", Date.now() - 60_000);
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM login_failures WHERE ip = ?", ip).one().n;
  }

  private async signIn(username: string, password: string): Promise<number | null> {
    const row = this.sql
      .exec<{ id: number; password_hash: string | null; salt: string | null }>(
        "SELECT id, password_hash, salt FROM accounts WHERE username = ?",
        username,
      )
      .toArray()[0];
    if (!row) return null;
    if (row.id === DEMO_ACCOUNT) {
      return (await sameSecret(password, this.env.SIMULATOR_DEMO_PASSWORD || "demo")) ? row.id : null;
    }
    if (!row.password_hash || !row.salt) return null;
    return (await sameSecret(await passwordHash(password, row.salt), row.password_hash)) ? row.id : null;
  }

  /** A code for the account, bound to the client, the redirect URI and the PKCE challenge. */
  private grant(account: number, params: Record<string, string>): string {
    const code = newToken(24);
    this.sql.exec(
      "INSERT INTO grants VALUES (?, ?, ?, ?, ?, ?)",
      code,
      account,
      params.client_id ?? "",
      params.redirect_uri ?? "",
      params.code_challenge ?? "",
      Date.now() + CODE_TTL_MS,
    );
    const target = new URL(params.redirect_uri as string);
    target.searchParams.set("code", code);
    if (params.state) target.searchParams.set("state", params.state);
    return target.toString();
  }

  /** The simulator's control routes are the operator's: HTTP Basic with the portal's OAuth client credentials. */
  isOperator(c: Context): Promise<boolean> {
    return this.authenticatesClient(c, new FormData());
  }

  /** client_secret_basic (RFC 6749 2.3.1) or client_secret_post. */
  private async authenticatesClient(c: Context, form: FormData): Promise<boolean> {
    const expected = registeredClient(this.env, portalOf(c));
    let id = form.get("client_id");
    let secret = form.get("client_secret");
    const basic = /^Basic (.+)$/i.exec(c.req.header("Authorization") ?? "")?.[1];
    if (basic) {
      // A header that is not base64 or not percent-encoding authenticates no one (401, never a 500).
      try {
        const [user, password] = atob(basic).split(":");
        id = decodeURIComponent((user ?? "").replaceAll("+", " "));
        secret = decodeURIComponent((password ?? "").replaceAll("+", " "));
      } catch {
        return false;
      }
    }
    return (
      typeof id === "string" &&
      typeof secret === "string" &&
      id === expected.clientId &&
      (await sameSecret(secret, expected.clientSecret))
    );
  }

  private async exchangeCode(c: Context, form: FormData) {
    const code = String(form.get("code") ?? "");
    const row = this.sql
      .exec<{ account: number; client_id: string; redirect_uri: string; challenge: string; expires: number }>(
        "SELECT account, client_id, redirect_uri, challenge, expires FROM grants WHERE code = ?",
        code,
      )
      .toArray()[0];
    // A code works once, whatever happens next.
    this.sql.exec("DELETE FROM grants WHERE code = ?", code);
    const verifier = String(form.get("code_verifier") ?? "");
    const valid =
      row !== undefined &&
      row.expires > Date.now() &&
      row.client_id === registeredClient(this.env, portalOf(c)).clientId &&
      row.redirect_uri === form.get("redirect_uri") &&
      verifier !== "" &&
      (await s256(verifier)) === row.challenge;
    if (!valid) return c.json({ error: "invalid_grant" }, 400);
    return c.json(this.issueTokens(row.account), 200, { "Cache-Control": "no-store" });
  }

  private issueTokens(account: number) {
    const access = newToken(24);
    const refresh = newToken(24);
    this.sql.exec("INSERT INTO tokens VALUES (?, 'access', ?, ?)", access, account, Date.now() + ACCESS_TTL_S * 1000);
    this.sql.exec("INSERT INTO tokens VALUES (?, 'refresh', ?, ?)", refresh, account, Number.MAX_SAFE_INTEGER);
    return {
      access_token: access,
      token_type: "Bearer",
      refresh_token: refresh,
      expires_in: ACCESS_TTL_S,
      scope: SCOPE,
      account: { id: account, email: `account-${account}@marketplace.example` },
    };
  }
}
