// A property test run long: `node scripts/long-run.mjs model` (npm run test:model) or `preflight` (npm run
// test:preflight). <PREFIX>_RUNS runs (default 300) in rounds of 25, each round a fresh `vitest` (a fresh
// workerd) with its own seed, so one long run never outgrows one test's resources (the Workers test pool
// wraps the prototype of a Durable Object class in one more proxy each time it constructs an instance,
// and every run makes a user and so an instance: past about 60 in one isolate, a call into one overflows
// the stack). Prints each round's seed; a failure names its seed and shrunk case, and stops.
import { spawnSync } from "node:child_process";

const SUITES = {
  model: { file: "test/publishing/model.test.ts", prefix: "MODEL" },
  preflight: { file: "test/publishing/preflight-differential.test.ts", prefix: "PREFLIGHT" },
};
const suite = SUITES[process.argv[2]];
if (!suite) {
  console.error(`usage: node scripts/long-run.mjs ${Object.keys(SUITES).join("|")}`);
  process.exit(2);
}
const { file, prefix } = suite;
const total = Number(process.env[`${prefix}_RUNS`] || 300);
const firstSeed = Number(process.env[`${prefix}_SEED`] || Date.now() % 1_000_000);
const ROUND = 25;
for (let done = 0, round = 0; done < total; done += ROUND, round += 1) {
  const seed = firstSeed + round;
  const runs = Math.min(ROUND, total - done);
  console.log(`${process.argv[2]} round ${round + 1}: ${runs} runs, ${prefix}_SEED=${seed}`);
  const result = spawnSync("npx", ["vitest", "run", file], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, [`${prefix}_RUNS`]: String(runs), [`${prefix}_SEED`]: String(seed) },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
console.log(`${total} runs passed`);
