/// <reference types="vite/client" />
// Types of `cloudflare:test` env and `cloudflare:workers` exports in the tests.
// The bindings come from src/worker-configuration.d.ts (wrangler types); the tests add their migrations.
declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("@cloudflare/vitest-plugin").D1Migration[];
    TEST_DIRECTORY_MIGRATIONS: import("@cloudflare/vitest-plugin").D1Migration[];
    /** The model-based test's number of runs and seed (empty: its defaults). */
    MODEL_RUNS: string;
    MODEL_SEED: string;
    /** Commands the model-based test leaves out, comma-separated (e.g. `unpublish,race`). */
    MODEL_WITHOUT: string;
    /** The dry run's differential test: its number of runs and seed (empty: its defaults). */
    PREFLIGHT_RUNS: string;
    PREFLIGHT_SEED: string;
    WRITE_COST_REPORT: string;
  }
}

// Vite's raw imports: a file's text (the wrangler.toml invariants test reads the configuration this way).
declare module "*?raw" {
  const text: string;
  export default text;
}
