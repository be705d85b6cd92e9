// Builds the package: ESM JavaScript and declarations in dist/,
// with the generated schema.d.ts beside them. `npm pack` runs it (prepack).
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
rmSync(join(here, "dist"), { recursive: true, force: true });
mkdirSync(join(here, "dist"));
// The repository's TypeScript (found from here up, as Node resolves packages), never a download.
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "--project", join(here, "tsconfig.build.json")], { stdio: "inherit" });
copyFileSync(join(here, "schema.d.ts"), join(here, "dist", "schema.d.ts"));
