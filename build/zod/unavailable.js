// Parts of zod the Worker never runs, swapped out of the production bundle by wrangler's `alias`
// (wrangler.toml): JSON Schema output and input, the schema compiler, the locales (one short fallback),
// the schema visitor.
// They are 56 KiB gzip of a 206 KiB bundle (regexes.js, the unused string formats, 2 KiB more);
// node_modules stays as installed. A zod upgrade that imports a name these modules lack fails the
// build (esbuild: "No matching export"), never silently.
export const unavailable = () => {
  throw new Error("zod: not in this build (build/zod)");
};
