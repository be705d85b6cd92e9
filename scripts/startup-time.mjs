// Fails when the production Worker's startup (parsing and running its global scope, as `wrangler check
// startup` profiles it locally) takes more than twice a one-route Hono Worker's, profiled the same way in
// the same run: three rounds turn about, the least of each Worker's three compared. A busy machine slows
// both alike, so its load does not decide; the absolute figures are the bench's (npm run bench --
// --startup, docs/benchmark.md#startup).
import { startupRounds } from "./startup/profile.mjs";

const MAX_RATIO = 2;

const figures = startupRounds(["baseline", "production"], 3);
const least = (worker) => Math.min(...figures[worker]);
const ratio = least("production") / least("baseline");
const shown = (worker) => figures[worker].map((ms) => ms.toFixed(0)).join(", ");
console.log(
  `production startup: ${least("production").toFixed(0)} ms (${shown("production")}), a one-route Hono Worker ${least("baseline").toFixed(0)} ms (${shown("baseline")}): ${ratio.toFixed(2)}x (at most ${MAX_RATIO}x)`,
);
if (ratio > MAX_RATIO) process.exit(1);
