// Fails when the production bundle (dist/index.js from `npm run build:check`) grows past its ceiling,
// gzipped as Cloudflare measures it. A generous ceiling, well within Workers' 3 MiB (Free) and 10 MiB
// (Paid): what a cold start pays for is startup time, not kilobytes.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const BUDGET_KIB = 1024;
const bytes = gzipSync(readFileSync("dist/index.js")).length;
const kib = bytes / 1024;
console.log(`production bundle: ${kib.toFixed(1)} KiB gzip (ceiling ${BUDGET_KIB} KiB)`);
if (kib > BUDGET_KIB) {
  console.error(`over the ceiling by ${(kib - BUDGET_KIB).toFixed(1)} KiB`);
  process.exit(1);
}
