import type { MarketplaceSimulator } from "./marketplace";

/** The simulator Worker's bindings (simulator/wrangler.toml, and .dev.vars for the secrets). */
export interface SimulatorEnv {
  MARKETPLACE: DurableObjectNamespace<MarketplaceSimulator>;
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

/** The OAuth client registered at a portal. */
export function registeredClient(env: SimulatorEnv, portal: Portal): { clientId: string; clientSecret: string } {
  return portal === "portal_a"
    ? { clientId: env.PORTAL_A_CLIENT_ID, clientSecret: env.PORTAL_A_CLIENT_SECRET }
    : { clientId: env.PORTAL_B_CLIENT_ID, clientSecret: env.PORTAL_B_CLIENT_SECRET };
}
