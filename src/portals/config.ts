import type { Env } from "../env";
import { MARKETPLACE_PROFILES } from "../lib/marketplaces";
import type { Marketplace } from "../lib/vocabulary";

/** Where a portal's API lives: a base URL, or "simulator" for the bundled one. */
export const portalApiBase = (env: Env, portal: Marketplace): string => env[MARKETPLACE_PROFILES[portal].env.api];

/** The header the forwarding route sets to the origin the simulator is served from. */
export const SIMULATOR_ORIGIN_HEADER = "X-Simulator-Origin";

/** Our OAuth client registration at a portal (the simulator registers the same values). */
export function portalClient(env: Env, portal: Marketplace): { clientId: string; clientSecret: string } {
  const names = MARKETPLACE_PROFILES[portal].env;
  const [clientId, clientSecret] = [env[names.clientId], env[names.clientSecret]];
  if (!clientId || !clientSecret) throw new Error(`${portal}: set ${names.clientId} and ${names.clientSecret}`);
  return { clientId, clientSecret };
}

/** The page the marketplace sends the user back to; the only redirect URI registered for our client. */
export const callbackUrl = (publicOrigin: string, portal: Marketplace) => `${publicOrigin}/oauth/callback/${portal}`;
