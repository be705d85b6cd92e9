// Fails when the production bundle (dist/worker.js from `npm run build:check`) grows past its budget,
// gzipped as Cloudflare measures it. The budget only comes down.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const BUDGET_KIB = 145;
const bytes = gzipSync(readFileSync("dist/worker.js")).length;
const kib = bytes / 1024;
console.log(`production bundle: ${kib.toFixed(1)} KiB gzip (budget ${BUDGET_KIB} KiB)`);
if (kib > BUDGET_KIB) {
  console.error(`over budget by ${(kib - BUDGET_KIB).toFixed(1)} KiB`);
  process.exit(1);
}
