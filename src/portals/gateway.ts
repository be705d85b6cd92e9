import * as oauth from "oauth4webapi";
import type { Env } from "../env";
import { outboundCall } from "../lib/outboundClock";
import type { Marketplace } from "../lib/vocabulary";
import { portalApiBase, portalClient } from "./config";
import type { Listing } from "./listing";

export type { Listing, Marketplace };

/** The access the service asks a marketplace for. */
const SCOPE = "listings features bids statistics";

/** How a marketplace call failed: refused for good, worth retrying, or the access token is not accepted. */
export class PortalError extends Error {
  constructor(
    readonly kind: "refused" | "transient" | "unauthorized",
    message: string,
  ) {
    super(message);
  }
}

export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  expiresAt: Date;
  scope: string[];
  account: { id: number; email: string };
}

export interface ListingState {
  remoteAdId: number;
  online: boolean;
  startDate: string | null;
  closeDate: string | null;
}

/** A listing as the marketplace API answers it (dates in epoch milliseconds). */
interface RawListing {
  remoteAdId: number;
  online: boolean;
  startDate?: number | null;
  closeDate?: number | null;
}

export interface RemoteBid {
  bidId: number;
  remoteAdId: number;
  amount: number;
  name: string;
  message: string;
  placedAt: string;
}

export interface RemoteStatistics {
  remoteAdId: number;
  views: number;
  asqs: number;
  bids: number;
  url: number;
  phone: number;
  favorites: number;
}

/** The origin the simulator's HTTP API answers on behind its binding (the host is not looked at). */
export const SIMULATOR_ORIGIN = "https://simulator.internal";

/**
 * The marketplace simulator Worker (simulator/), reached over HTTP through the MARKETPLACE service
 * binding; bound in development, tests and sandbox only.
 */
export function marketplaceSimulator(env: Env): Fetcher {
  const simulator = env.MARKETPLACE;
  if (!simulator) throw new Error('a portal is configured as "simulator", but MARKETPLACE is not bound');
  return simulator;
}

/**
 * A marketplace's refusal in the API's words: the field it names becomes the path a client writes
 * (`attributes.fuel: is required` → `attributes.<portal>.fuel: is required`); the listing's other
 * fields (`price.model`, `title`, …) already are.
 */
export const inWritePaths = (portal: Marketplace, reason: string) =>
  reason.replace(/^attributes\./, `attributes.${portal}.`);

/** An OAuth or network failure as the kind of PortalError it means for the caller. */
export function portalErrorOf(error: unknown): PortalError {
  if (error instanceof PortalError) return error;
  if (error instanceof oauth.ResponseBodyError) {
    const kind = error.status === 429 || error.status >= 500 ? "transient" : "refused";
    return new PortalError(kind, error.error_description ?? error.error);
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) return new PortalError("unauthorized", error.message);
  if (error instanceof oauth.OperationProcessingError) {
    // A 5xx or 429 of the token endpoint is no OAuth error body: the library names the response as its cause.
    const status = error.cause instanceof Response ? error.cause.status : 0;
    return new PortalError(status === 429 || status >= 500 ? "transient" : "refused", error.message);
  }
  return new PortalError("transient", error instanceof Error ? error.message : "portal unreachable");
}

/**
 * The only way the service talks to a marketplace: its HTTP API at the base URL its profile's variable
 * holds (lib/marketplaces.ts; OAuth endpoints `oauth/authorize`, `oauth/token`, `oauth/revoke` below it), or the
 * simulator Worker's, through its binding, when that is "simulator". The OAuth side is oauth4webapi
 * (authorization code with PKCE, client_secret_basic, refresh, revocation), so pointing at a real
 * marketplace is configuration only: the base URL, PORTAL_<X>_CLIENT_ID and the secret
 * PORTAL_<X>_CLIENT_SECRET.
 */
export class PortalGateway {
  constructor(
    private readonly env: Env,
    readonly portal: Marketplace,
  ) {}

  private get base(): string {
    return portalApiBase(this.env, this.portal);
  }

  get usesSimulator(): boolean {
    return this.base === "simulator";
  }

  /** The simulator answers on an internal origin; its pages are served on the API's own (`publicOrigin`). */
  private authorizationServer(publicOrigin = ""): oauth.AuthorizationServer {
    const api = this.usesSimulator ? `${SIMULATOR_ORIGIN}/${this.portal}/` : this.base;
    return {
      issuer: api,
      authorization_endpoint: this.usesSimulator
        ? `${publicOrigin}/simulator/${this.portal}/oauth/authorize`
        : new URL("oauth/authorize", api).toString(),
      token_endpoint: new URL("oauth/token", api).toString(),
      revocation_endpoint: new URL("oauth/revoke", api).toString(),
    };
  }

  private oauthClient() {
    const { clientId, clientSecret } = portalClient(this.env, this.portal);
    return { client: { client_id: clientId }, authentication: oauth.ClientSecretBasic(clientSecret) };
  }

  private requestOptions(): { [oauth.customFetch]?: typeof fetch; signal: AbortSignal } {
    const signal = AbortSignal.timeout(15_000);
    if (!this.usesSimulator) return { signal };
    const simulator = marketplaceSimulator(this.env);
    return { signal, [oauth.customFetch]: (url, init) => simulator.fetch(new Request(url, init)) };
  }

  /** Where the end user grants access; `publicOrigin` is this API's origin (the simulator is served by it). */
  authorizeUrl(publicOrigin: string, params: { state: string; redirectUri: string; codeChallenge: string }): string {
    const url = new URL(this.authorizationServer(publicOrigin).authorization_endpoint as string);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", this.oauthClient().client.client_id);
    url.searchParams.set("redirect_uri", params.redirectUri);
    url.searchParams.set("scope", SCOPE);
    url.searchParams.set("state", params.state);
    url.searchParams.set("code_challenge", params.codeChallenge);
    url.searchParams.set("code_challenge_method", "S256");
    return url.toString();
  }

  private tokens(result: oauth.TokenEndpointResponse): TokenSet {
    const account = result.account as { id?: unknown; email?: unknown } | undefined;
    if (typeof account?.id !== "number" || !result.refresh_token) {
      throw new PortalError("refused", "the token response names no account or refresh token");
    }
    return {
      accessToken: result.access_token,
      refreshToken: result.refresh_token,
      expiresAt: new Date(Date.now() + (result.expires_in ?? 3600) * 1000),
      scope: (result.scope ?? SCOPE).split(" ").filter(Boolean),
      account: { id: account.id, email: typeof account.email === "string" ? account.email : "" },
    };
  }

  /** The code the user came back with, exchanged with its PKCE verifier; the state is checked again. */
  async exchangeCode(input: {
    code: string;
    state: string;
    expectedState: string;
    redirectUri: string;
    codeVerifier: string;
  }): Promise<TokenSet> {
    const as = this.authorizationServer();
    const { client, authentication } = this.oauthClient();
    try {
      const callback = oauth.validateAuthResponse(
        as,
        client,
        new URLSearchParams({ code: input.code, state: input.state }),
        input.expectedState,
      );
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        authentication,
        callback,
        input.redirectUri,
        input.codeVerifier,
        this.requestOptions(),
      );
      return this.tokens(await oauth.processAuthorizationCodeResponse(as, client, response));
    } catch (error) {
      throw portalErrorOf(error);
    }
  }

  async refresh(refreshToken: string): Promise<TokenSet> {
    const as = this.authorizationServer();
    const { client, authentication } = this.oauthClient();
    try {
      const response = await oauth.refreshTokenGrantRequest(
        as,
        client,
        authentication,
        refreshToken,
        this.requestOptions(),
      );
      return this.tokens(await oauth.processRefreshTokenResponse(as, client, response));
    } catch (error) {
      throw portalErrorOf(error);
    }
  }

  async revoke(token: string): Promise<void> {
    const as = this.authorizationServer();
    const { client, authentication } = this.oauthClient();
    try {
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, client, authentication, token, this.requestOptions()),
      );
    } catch (error) {
      throw portalErrorOf(error);
    }
  }

  /**
   * One call of the listing API. A write carries our `reference` for what it does (as `Idempotency-Key`),
   * so that the marketplace can tell a repeat and we can ask for the outcome when its response is lost.
   */
  private async send<T>(
    path: string,
    init: { method?: string; token?: string; body?: unknown; reference?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (init.token) headers.Authorization = `Bearer ${init.token}`;
    if (init.reference) headers["Idempotency-Key"] = init.reference;
    if (init.body !== undefined) headers["Content-Type"] = "application/json";
    const requestInit = {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    };
    const signal = AbortSignal.timeout(15_000);
    const { response, payload } = await outboundCall(async () => {
      let response: Response;
      try {
        response = this.usesSimulator
          ? await marketplaceSimulator(this.env).fetch(`${SIMULATOR_ORIGIN}/${this.portal}/${path}`, {
              ...requestInit,
              signal,
            })
          : await fetch(new URL(path, this.base), { ...requestInit, signal });
      } catch (error) {
        throw new PortalError("transient", error instanceof Error ? error.message : "portal unreachable");
      }
      return { response, payload: (await response.json().catch(() => ({}))) as T & { error?: string } };
    });
    if (response.ok) return payload;
    const reason = payload.error ?? `HTTP ${response.status}`;
    if (response.status === 401) throw new PortalError("unauthorized", reason);
    if (response.status === 429 || response.status >= 500) throw new PortalError("transient", reason);
    throw new PortalError("refused", inWritePaths(this.portal, reason));
  }

  private listingState(raw: RawListing): ListingState {
    const iso = (v: number | null | undefined) => (v ? new Date(v).toISOString() : null);
    return {
      remoteAdId: raw.remoteAdId,
      online: raw.online,
      startDate: iso(raw.startDate),
      closeDate: iso(raw.closeDate),
    };
  }

  async createListing(token: string, listing: Listing): Promise<ListingState> {
    return this.listingState(
      await this.send("listings", { method: "POST", token, body: listing, reference: listing.externalRef }),
    );
  }

  /**
   * The marketplace's review of a listing without the listing (a dry run): resolves when it would be
   * taken, throws its refusal (`refused`, the reason naming the field) or a `transient` error when it
   * cannot answer.
   */
  async verifyListing(token: string, listing: Listing): Promise<void> {
    await this.send("listings/verify", { method: "POST", token, body: listing });
  }

  async updateListing(token: string, remoteAdId: number, listing: Listing, reference: string): Promise<ListingState> {
    return this.listingState(
      await this.send(`listings/${remoteAdId}`, { method: "PUT", token, body: listing, reference }),
    );
  }

  async deleteListing(token: string, remoteAdId: number, reference: string): Promise<void> {
    await this.send(`listings/${remoteAdId}`, { method: "DELETE", token, reference });
  }

  /** The listing, or null when the account holds no listing of that id. */
  async getListing(token: string, remoteAdId: number): Promise<ListingState | null> {
    try {
      return this.listingState(await this.send(`listings/${remoteAdId}`, { token }));
    } catch (error) {
      if (error instanceof PortalError && error.kind === "refused") return null;
      throw error;
    }
  }

  /** The listing the marketplace holds under our reference, if any (idempotent creates look first). */
  async findListing(token: string, externalRef: string): Promise<ListingState | null> {
    const found = await this.send<{ listings: RawListing[] }>(
      `listings?externalRef=${encodeURIComponent(externalRef)}`,
      { token },
    );
    const [first] = found.listings;
    return first ? this.listingState(first) : null;
  }

  /** `reference` makes the purchase idempotent: the marketplace applies one purchase per reference. */
  async buyFeature(token: string, remoteAdId: number, feature: string, reference: string): Promise<void> {
    await this.send(`listings/${remoteAdId}/features`, {
      method: "POST",
      token,
      body: { feature, reference },
      reference,
    });
  }

  /** Whether the marketplace holds the feature purchase made under our reference. */
  async holdsFeature(token: string, remoteAdId: number, reference: string): Promise<boolean> {
    const found = await this.send<{ features: unknown[] }>(
      `listings/${remoteAdId}/features?reference=${encodeURIComponent(reference)}`,
      { token },
    );
    return found.features.length > 0;
  }

  async bids(token: string): Promise<RemoteBid[]> {
    return (await this.send<{ bids: RemoteBid[] }>("bids", { token })).bids;
  }

  async statistics(token: string, date: string): Promise<RemoteStatistics[]> {
    return (await this.send<{ statistics: RemoteStatistics[] }>(`statistics?date=${date}`, { token })).statistics;
  }
}
