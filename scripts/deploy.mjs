// npm run deploy [-- --env production]: `wrangler deploy` with GIT_COMMIT set to this commit, and the
// committed OpenAPI document shipped as a static asset at /rest/v1/openapi.json (the production Worker
// does not build it; see src/routes/document.ts). The copy is removed again afterwards, so that
// `npm run dev` keeps serving the document it builds from the routes.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";

const STATIC_DOCUMENT = "public/rest/v1/openapi.json";
const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
mkdirSync("public/rest/v1", { recursive: true });
copyFileSync("openapi/openapi.json", STATIC_DOCUMENT);
try {
  const deploy = spawnSync("npx", ["wrangler", "deploy", "--var", `GIT_COMMIT:${commit}`, ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  process.exitCode = deploy.status ?? 1;
} finally {
  rmSync("public/rest", { recursive: true, force: true });
}
