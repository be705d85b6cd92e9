// Fails when the production Worker's modules (dist/ from `npm run build:check`: the entry and its body,
// scripts/build-worker.mjs) grow past their ceiling, gzipped as Cloudflare measures them. A generous
// ceiling, well within Workers' 3 MiB (Free) and 10 MiB (Paid); what an isolate's startup pays for is
// held by scripts/startup-time.mjs.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const BUDGET_KIB = 1024;
const modules = readdirSync("dist").filter((name) => name.endsWith(".js"));
const bytes = modules.reduce((sum, name) => sum + gzipSync(readFileSync(join("dist", name))).length, 0);
const kib = bytes / 1024;
console.log(`production Worker: ${modules.length} modules, ${kib.toFixed(1)} KiB gzip (ceiling ${BUDGET_KIB} KiB)`);
if (kib > BUDGET_KIB) {
  console.error(`over the ceiling by ${(kib - BUDGET_KIB).toFixed(1)} KiB`);
  process.exit(1);
}
