// The client keeps its word within a major version (docs/versioning.md): the typed programs written
// against the previous released client (its README's, the quickstart's, the round trip) type-check
// against this one. A change that breaks them is listed as breaking and moves the major.
import { execFileSync, spawnSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { blocksOf } from "./docsAsPrograms.mjs";

/** The pages whose TypeScript an integrator copied, and the round trip the client-package check runs. */
const PAGES = ["client/README.md", "docs/quickstart.md", "README.md"];
const ROUND_TRIP = "test/outside/programs/roundTrip.ts";

const git = (repo, args) => execFileSync("git", args, { cwd: repo, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
const versionAt = (repo, commit) => JSON.parse(git(repo, ["show", `${commit}:client/package.json`])).version;
const major = (version) => Number(version.split(".")[0]);

/** The newest commit whose client version is not the working tree's: the previous release, and its version. */
function previousRelease(repo, current) {
  for (const commit of git(repo, ["log", "--format=%H", "--", "client/package.json"]).split("\n").filter(Boolean)) {
    const version = versionAt(repo, commit);
    if (version !== current) return { commit, version };
  }
  return undefined;
}

/**
 * Type-checks the previous release's programs in `project` (where this client is installed) with `tsc`,
 * reporting each through `check`; after a major version they are reported, not held to.
 */
export async function checkPreviousPrograms({ repo, project, tsc, check }) {
  const current = JSON.parse(await readFile(join(repo, "client/package.json"), "utf8")).version;
  const previous = previousRelease(repo, current);
  if (!previous) {
    check(false, `a previous client release to compare ${current} with (git history of client/package.json)`);
    return;
  }
  const base = JSON.parse(await readFile(join(project, "tsconfig.json"), "utf8"));
  const programs = PAGES.map((page) => {
    const text = blocksOf(git(repo, ["show", `${previous.commit}:${page}`]))
      .filter((block) => block.language === "ts" && !block.notRun)
      .map((block) => block.text)
      .join("\n");
    return { name: page, text };
  }).filter((program) => program.text.trim());
  programs.push({ name: ROUND_TRIP, text: git(repo, ["show", `${previous.commit}:${ROUND_TRIP}`]) });
  for (const { name, text } of programs) {
    const file = `compat-${name.replaceAll(/[^\w]+/g, "-")}.ts`;
    await writeFile(join(project, file), `${text}\n`);
    const config = `tsconfig.${file}.json`;
    await writeFile(join(project, config), JSON.stringify({ ...base, files: [file] }));
    const typed = spawnSync(process.execPath, [tsc, "-p", config, "--noEmit"], { cwd: project, encoding: "utf8" });
    const holds = major(current) === major(previous.version);
    if (typed.status !== 0) console.error(typed.stdout);
    check(
      typed.status === 0 || !holds,
      `${name} as client ${previous.version} printed it type-checks against ${current}${holds ? "" : " (a new major: reported only)"}`,
    );
  }
}
