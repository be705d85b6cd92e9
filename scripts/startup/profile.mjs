// A Worker's startup as `wrangler check startup` profiles it locally: the profile's span less its idle
// time, in ms. The Workers it measures:
//   production  the production Worker as deployed (wrangler.toml's env.production: scripts/build-worker.mjs)
//   baseline    a one-route Hono Worker (oneRoute.ts beside this file), built the same way as a bundle
//   body        the production Worker with its body loaded at once (body.ts): what an isolate's first
//               invocation adds to its startup
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const HERE = import.meta.dirname;

/** How `wrangler deploy` builds each: its configuration and environment. */
const BUILDS = {
  production: ["--config", "wrangler.toml", "--env", "production"],
  baseline: ["--config", join(HERE, "wrangler.toml")],
  body: ["--config", join(HERE, "wrangler.toml"), "--env", "body"],
};

const DIRECTORY = mkdtempSync(join(tmpdir(), "startup-"));

function wrangler(args) {
  const run = spawnSync("npx", ["wrangler", ...args], {
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  if (run.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed:\n${run.stdout}${run.stderr}`);
}

/** The Worker's upload as `wrangler deploy` makes it, built once. */
const bundles = new Map();
function bundleOf(worker) {
  if (!bundles.has(worker)) {
    const bundle = join(DIRECTORY, `${worker}.bundle`);
    wrangler(["deploy", "--dry-run", ...BUILDS[worker], "--outfile", bundle]);
    bundles.set(worker, bundle);
  }
  return bundles.get(worker);
}

export function startupMs(worker) {
  const outfile = join(DIRECTORY, `${worker}.cpuprofile`);
  wrangler(["check", "startup", "--worker", bundleOf(worker), "--outfile", outfile]);
  const profile = JSON.parse(readFileSync(outfile, "utf8"));
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === "(idle)").map((node) => node.id));
  const idleMs = profile.samples.reduce(
    (sum, id, index) => sum + (idle.has(id) ? (profile.timeDeltas[index + 1] ?? 0) / 1000 : 0),
    0,
  );
  return (profile.endTime - profile.startTime) / 1000 - idleMs;
}

/** Each worker profiled `rounds` times, turn about (so a change in the machine's load falls on all alike). */
export function startupRounds(workers, rounds) {
  const figures = Object.fromEntries(workers.map((worker) => [worker, []]));
  for (let round = 0; round < rounds; round += 1) for (const worker of workers) figures[worker].push(startupMs(worker));
  return figures;
}
