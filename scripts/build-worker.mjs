// The production Worker as modules of their own, which wrangler.toml's [env.production] uploads as they
// are (no_bundle): src/index.ts with what every invocation needs, and the Worker's body
// (src/worker.ts, the Durable Objects' work) in modules that the runtime compiles only when they are
// first imported, so a new isolate's startup parses a few kilobytes (docs/benchmark.md). Resolved as
// wrangler resolves a bundle for workerd; `node:` and `cloudflare:` modules are the runtime's own
// (nodejs_compat).
import { rmSync } from "node:fs";
import { build } from "esbuild";

const OUTDIR = ".wrangler/production";

rmSync(OUTDIR, { recursive: true, force: true });
await build({
  entryPoints: { index: "src/index.ts" },
  outdir: OUTDIR,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "neutral",
  target: "es2024",
  conditions: ["workerd", "worker", "browser"],
  mainFields: ["browser", "module", "main"],
  external: ["cloudflare:*", "node:*"],
  chunkNames: "[name]-[hash]",
  minify: true,
  sourcemap: "linked",
  logLevel: "warning",
});
