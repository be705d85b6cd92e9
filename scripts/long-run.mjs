// The model-based publishing test, run long: MODEL_RUNS runs (default 300) in rounds of 25, each round
// a fresh `vitest` (a fresh workerd) with its own seed, so one long run never outgrows one test's
// resources (the Workers test pool wraps the prototype of a Durable Object class in one more proxy each
// time it constructs an instance, and every run makes a user and so an instance: past about 60 in one
// isolate, a call into one overflows the stack). Prints each round's seed; a failure names its seed and
// shrunk sequence, and stops.
import { spawnSync } from "node:child_process";

const total = Number(process.env.MODEL_RUNS || 300);
const firstSeed = Number(process.env.MODEL_SEED || Date.now() % 1_000_000);
const ROUND = 25;
for (let done = 0, round = 0; done < total; done += ROUND, round += 1) {
  const seed = firstSeed + round;
  const runs = Math.min(ROUND, total - done);
  console.log(`model round ${round + 1}: ${runs} runs, MODEL_SEED=${seed}`);
  const result = spawnSync("npx", ["vitest", "run", "test/publishing/model.test.ts"], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, MODEL_RUNS: String(runs), MODEL_SEED: String(seed) },
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
console.log(`${total} runs passed`);
