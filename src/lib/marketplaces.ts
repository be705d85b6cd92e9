/**
 * The marketplaces we publish to, each described once: where its settings live, what it asks of a
 * seller, and the names the spec gives after it. Everything marketplace-specific is derived from this
 * record, so a new marketplace is a new entry here; the compiler then names what else needs one (its
 * Worker variables, the examples) and the simulator mirrors it (simulator/src/env.ts).
 */
interface MarketplaceProfile {
  /** The Worker variables holding its API's base URL and our OAuth client's registration there. */
  readonly env: { readonly api: string; readonly clientId: string; readonly clientSecret: string };
  /**
   * Whether it asks a business seller (a user with a companyName) who attached no manufacturer for
   * the product-safety (GPSR) keys its categories define.
   */
  readonly asksProductSafety: boolean;
  /** The spec's `order` field for the close date of an ad's listing there. */
  readonly closeDateOrder: string;
}

export const MARKETPLACE_PROFILES = {
  portal_a: {
    env: { api: "PORTAL_A_API", clientId: "PORTAL_A_CLIENT_ID", clientSecret: "PORTAL_A_CLIENT_SECRET" },
    asksProductSafety: true,
    closeDateOrder: "closeDatePortalA",
  },
  portal_b: {
    env: { api: "PORTAL_B_API", clientId: "PORTAL_B_CLIENT_ID", clientSecret: "PORTAL_B_CLIENT_SECRET" },
    asksProductSafety: false,
    closeDateOrder: "closeDatePortalB",
  },
} as const satisfies Record<string, MarketplaceProfile>;

export type Marketplace = keyof typeof MARKETPLACE_PROFILES;
export const MARKETPLACES = Object.keys(MARKETPLACE_PROFILES) as [Marketplace, ...Marketplace[]];

/** The marketplaces that ask business sellers for the product-safety keys. */
export const PRODUCT_SAFETY_MARKETPLACES = MARKETPLACES.filter((m) => MARKETPLACE_PROFILES[m].asksProductSafety);

/** An object with one entry per key (a marketplace, a publish target), as the spec's per-portal objects are. */
export const keyedBy = <K extends string, T>(keys: readonly K[], value: (key: K) => T): Record<K, T> =>
  Object.fromEntries(keys.map((key) => [key, value(key)])) as Record<K, T>;

/** The spec's `<prefix><marketplace>` fields (`statistics_portal_a`), one per marketplace. */
export const prefixedPerMarketplace = <P extends string, T>(
  prefix: P,
  value: (marketplace: Marketplace) => T,
): { [M in Marketplace as `${P}${M}`]: T } =>
  Object.fromEntries(MARKETPLACES.map((m) => [`${prefix}${m}`, value(m)])) as {
    [M in Marketplace as `${P}${M}`]: T;
  };
