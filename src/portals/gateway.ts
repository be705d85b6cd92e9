import type { Env } from "../env";

export type MarketplacePortal = "portal_a" | "portal_b";

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

export interface Listing {
  externalRef: string;
  title: string;
  description: string;
  price: number | null;
  images: string[];
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

/** The bundled simulator of a portal; bound in development and sandbox only. */
export function simulatorOf(env: Env, portal: MarketplacePortal) {
  const namespace = env.MARKETPLACE_SIMULATOR;
  if (!namespace) throw new Error(`${portal} is configured as "simulator", but MARKETPLACE_SIMULATOR is not bound`);
  return namespace.get(namespace.idFromName(portal));
}

/**
 * The only way the service talks to a marketplace: its HTTP API, at the base URL of PORTAL_A_API /
 * PORTAL_B_API, or the bundled simulator when that is "simulator". Pointing at a real marketplace is
 * configuration only.
 */
export class PortalGateway {
  constructor(
    private readonly env: Env,
    readonly portal: MarketplacePortal,
  ) {}

  private get base(): string {
    return this.portal === "portal_a" ? this.env.PORTAL_A_API : this.env.PORTAL_B_API;
  }

  get usesSimulator(): boolean {
    return this.base === "simulator";
  }

  /** Where the end user grants access; `publicOrigin` is this API's origin (the simulator is served by it). */
  authorizeUrl(publicOrigin: string, params: { state: string; redirectUri: string }): string {
    const url = this.usesSimulator
      ? new URL(`/simulator/${this.portal}/oauth/authorize`, publicOrigin)
      : new URL("oauth/authorize", this.base);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("state", params.state);
    url.searchParams.set("redirect_uri", params.redirectUri);
    return url.toString();
  }

  private async send<T>(path: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (init.token) headers.Authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers["Content-Type"] = "application/json";
    const requestInit = {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    };
    let response: Response;
    try {
      response = this.usesSimulator
        ? await simulatorOf(this.env, this.portal).fetch(
            new Request(`https://simulator.internal/${this.portal}/${path}`, requestInit),
          )
        : await fetch(new URL(path, this.base), { ...requestInit, signal: AbortSignal.timeout(15_000) });
    } catch (error) {
      throw new PortalError("transient", error instanceof Error ? error.message : "portal unreachable");
    }
    const payload = (await response.json().catch(() => ({}))) as T & { error?: string };
    if (response.ok) return payload;
    const reason = payload.error ?? `HTTP ${response.status}`;
    if (response.status === 401) throw new PortalError("unauthorized", reason);
    if (response.status === 429 || response.status >= 500) throw new PortalError("transient", reason);
    throw new PortalError("refused", reason);
  }

  private tokens(raw: {
    access_token: string;
    refresh_token: string;
    expires_in: number;
    scope: string[];
    account: { id: number; email: string };
  }): TokenSet {
    return {
      accessToken: raw.access_token,
      refreshToken: raw.refresh_token,
      expiresAt: new Date(Date.now() + raw.expires_in * 1000),
      scope: raw.scope,
      account: raw.account,
    };
  }

  async exchangeCode(code: string, redirectUri: string): Promise<TokenSet> {
    return this.tokens(
      await this.send("oauth/token", {
        method: "POST",
        body: { grant_type: "authorization_code", code, redirect_uri: redirectUri },
      }),
    );
  }

  async refresh(refreshToken: string): Promise<TokenSet> {
    return this.tokens(
      await this.send("oauth/token", {
        method: "POST",
        body: { grant_type: "refresh_token", refresh_token: refreshToken },
      }),
    );
  }

  async revoke(token: string): Promise<void> {
    await this.send("oauth/revoke", { method: "POST", body: { token } });
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
    return this.listingState(await this.send("listings", { method: "POST", token, body: listing }));
  }

  async updateListing(token: string, remoteAdId: number, listing: Listing): Promise<ListingState> {
    return this.listingState(await this.send(`listings/${remoteAdId}`, { method: "PUT", token, body: listing }));
  }

  async deleteListing(token: string, remoteAdId: number): Promise<void> {
    await this.send(`listings/${remoteAdId}`, { method: "DELETE", token });
  }

  async getListing(token: string, remoteAdId: number): Promise<ListingState> {
    return this.listingState(await this.send(`listings/${remoteAdId}`, { token }));
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
    await this.send(`listings/${remoteAdId}/features`, { method: "POST", token, body: { feature, reference } });
  }

  async bids(token: string): Promise<RemoteBid[]> {
    return (await this.send<{ bids: RemoteBid[] }>("bids", { token })).bids;
  }

  async statistics(token: string, date: string): Promise<RemoteStatistics[]> {
    return (await this.send<{ statistics: RemoteStatistics[] }>(`statistics?date=${date}`, { token })).statistics;
  }
}
