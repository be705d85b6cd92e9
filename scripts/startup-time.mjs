// Fails when the production Worker's startup (parsing and running its global scope, as `wrangler check
// startup` profiles it locally) takes more than twice a one-route Hono Worker's, profiled the same way in
// the same run: three rounds turn about, the median of each Worker's three compared (the least was
// decided once by a baseline profile of 13 ms among 34 and 42 on a busy machine). A busy machine slows
// both alike, so its load does not decide; the absolute figures are the bench's (npm run bench --
// --startup, docs/benchmark.md#startup).
import { startupRounds } from "./startup/profile.mjs";

const MAX_RATIO = 2;
const ROUNDS = 3;

const figures = startupRounds(["baseline", "production"], ROUNDS);
const median = (worker) => [...figures[worker]].sort((a, b) => a - b)[Math.floor(ROUNDS / 2)];
const ratio = median("production") / median("baseline");
const shown = (worker) => figures[worker].map((ms) => ms.toFixed(0)).join(", ");
console.log(
  `production startup: ${median("production").toFixed(0)} ms (${shown("production")}), a one-route Hono Worker ${median("baseline").toFixed(0)} ms (${shown("baseline")}): ${ratio.toFixed(2)}x (at most ${MAX_RATIO}x)`,
);
if (ratio > MAX_RATIO) process.exit(1);
