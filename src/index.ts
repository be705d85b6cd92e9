// The Worker with the bundled marketplace simulator (development, tests, sandbox). Production deploys
// src/worker.ts, which leaves the simulator out of the bundle.

export { MarketplaceSimulator } from "./portals/simulator";
export { default, RateLimiter, UserTokens } from "./worker";
