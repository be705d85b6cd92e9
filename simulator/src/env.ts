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

export const PORTALS = ["portal_a", "portal_b"] as const;
export type Portal = (typeof PORTALS)[number];

export const isPortal = (value: string | undefined): value is Portal =>
  (PORTALS as readonly string[]).includes(value ?? "");

/** The portal a request is for: its `:portal` path parameter (the Worker routes only known ones here). */
export const portalOf = (c: Context): Portal => (c.req.param("portal") === "portal_b" ? "portal_b" : "portal_a");

/** The OAuth client registered at a portal. */
export function registeredClient(env: SimulatorEnv, portal: Portal): { clientId: string; clientSecret: string } {
  return portal === "portal_a"
    ? { clientId: env.PORTAL_A_CLIENT_ID, clientSecret: env.PORTAL_A_CLIENT_SECRET }
    : { clientId: env.PORTAL_B_CLIENT_ID, clientSecret: env.PORTAL_B_CLIENT_SECRET };
}
