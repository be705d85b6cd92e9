import type { Context } from "hono";

/** The simulator Worker's bindings (simulator/wrangler.toml, and .dev.vars for the secrets). */
export interface SimulatorEnv {
  /** The MarketplaceSimulator object per portal, reached by `fetch` only (so this file needs not import it). */
  MARKETPLACE: DurableObjectNamespace;
  PORTAL_A_CLIENT_ID: string;
  PORTAL_B_CLIENT_ID: string;
  PORTAL_A_CLIENT_SECRET: string;
  PORTAL_B_CLIENT_SECRET: string;
  /** The `demo` account's password; "demo" when unset. */
  SIMULATOR_DEMO_PASSWORD?: string;
}

/**
 * The marketplaces the simulator plays, mirroring the API's profiles (src/lib/marketplaces.ts): for each,
 * the variables holding the OAuth client registered there.
 */
const PORTAL_PROFILES = {
  portal_a: { clientId: "PORTAL_A_CLIENT_ID", clientSecret: "PORTAL_A_CLIENT_SECRET" },
  portal_b: { clientId: "PORTAL_B_CLIENT_ID", clientSecret: "PORTAL_B_CLIENT_SECRET" },
} as const satisfies Record<string, { clientId: keyof SimulatorEnv; clientSecret: keyof SimulatorEnv }>;

export type Portal = keyof typeof PORTAL_PROFILES;
export const PORTALS = Object.keys(PORTAL_PROFILES) as [Portal, ...Portal[]];

export const isPortal = (value: string | undefined): value is Portal =>
  (PORTALS as readonly string[]).includes(value ?? "");

/** The portal a request is for: its `:portal` path parameter (the Worker routes only known ones here). */
export function portalOf(c: Context): Portal {
  const portal = c.req.param("portal");
  if (!isPortal(portal)) throw new Error(`not a marketplace the simulator plays: ${portal}`);
  return portal;
}

/** The OAuth client registered at a portal. */
export function registeredClient(env: SimulatorEnv, portal: Portal): { clientId: string; clientSecret: string } {
  const names = PORTAL_PROFILES[portal];
  return { clientId: env[names.clientId], clientSecret: env[names.clientSecret] };
}
