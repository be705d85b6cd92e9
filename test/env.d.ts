// Types of `cloudflare:test` env and `cloudflare:workers` exports in the tests.
type AppBindings = import("../src/env").Env;

declare namespace Cloudflare {
  interface Env extends AppBindings {
    TEST_MIGRATIONS: import("@cloudflare/vitest-pool-workers").D1Migration[];
  }
  interface GlobalProps {
    mainModule: typeof import("../src/index");
    durableNamespaces: "RateLimiter" | "UserTokens" | "MarketplaceSimulator";
  }
}

// Vite's raw imports: a file's text (the wrangler.toml invariants test reads the configuration this way).
declare module "*?raw" {
  const text: string;
  export default text;
}
