// npm run deploy [-- --env production]: `wrangler deploy` with GIT_COMMIT set to this commit (outside
// production, after deploying the marketplace simulator's Worker for the same environment).
import { execFileSync, spawnSync } from "node:child_process";
import { parseArgs } from "node:util";

const args = process.argv.slice(2);
const environment = parseArgs({ args, options: { env: { type: "string" } }, strict: false }).values.env ?? "";

// The marketplace simulator is a Worker of its own, deployed beside the API wherever the API is bound
// to it (the sandbox); production talks to the real marketplaces and never gets it.
if (environment !== "production") {
  const simulatorEnv = environment ? ["--env", environment] : [];
  const simulator = spawnSync("npx", ["wrangler", "deploy", "--config", "simulator/wrangler.toml", ...simulatorEnv], {
    stdio: "inherit",
  });
  if (simulator.status !== 0) process.exit(simulator.status ?? 1);
}
const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
const deploy = spawnSync("npx", ["wrangler", "deploy", "--var", `GIT_COMMIT:${commit}`, ...args], { stdio: "inherit" });
process.exitCode = deploy.status ?? 1;
