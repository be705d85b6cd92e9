import type { Env } from "../env";
import type { Marketplace } from "../lib/vocabulary";

/** Where a portal's API lives: a base URL, or "simulator" for the bundled one. */
export const portalApiBase = (env: Env, portal: Marketplace): string =>
  portal === "portal_a" ? env.PORTAL_A_API : env.PORTAL_B_API;

/** The header the forwarding route sets to the origin the simulator is served from. */
export const SIMULATOR_ORIGIN_HEADER = "X-Simulator-Origin";

/** Our OAuth client registration at a portal (the simulator registers the same values). */
export function portalClient(env: Env, portal: Marketplace): { clientId: string; clientSecret: string } {
  const [clientId, clientSecret] =
    portal === "portal_a"
      ? [env.PORTAL_A_CLIENT_ID, env.PORTAL_A_CLIENT_SECRET]
      : [env.PORTAL_B_CLIENT_ID, env.PORTAL_B_CLIENT_SECRET];
  if (!clientId || !clientSecret)
    throw new Error(`${portal}: set ${portal.toUpperCase()}_CLIENT_ID and ${portal.toUpperCase()}_CLIENT_SECRET`);
  return { clientId, clientSecret };
}

/** The page the marketplace sends the user back to; the only redirect URI registered for our client. */
export const callbackUrl = (publicOrigin: string, portal: Marketplace) => `${publicOrigin}/oauth/callback/${portal}`;
