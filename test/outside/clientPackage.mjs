// npm run test:client-package: the typed client as an integrator gets it. Packs client/ with `npm pack`,
// installs the tarball into a new project in a temporary folder (its dependencies, tsx and @types/node
// from the registry), type-checks a small program and the round trip (test/outside/programs/) against the
// package's types (and a call missing a required field, which must not compile), then runs them against
// `npm run dev` on http://localhost:8787, and after them every program and request the docs print
// (docsAsPrograms.mjs).
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { checkPreviousPrograms } from "./clientCompat.mjs";
import { startDev } from "./devServer.mjs";
import { runDocs } from "./docsAsPrograms.mjs";

const REPO = resolve(import.meta.dirname, "../..");
/** The integrator's compiler: the current TypeScript (7, native) and the last with a JavaScript API (5.9). */
const COMPILERS = {
  "TypeScript 7": join(REPO, "node_modules", "typescript-7", "bin", "tsc"),
  "TypeScript 5.9": join(REPO, "node_modules", "typescript", "bin", "tsc"),
};
const DEV_LOG = join(REPO, "test", "screenshots", "client-package-dev.log");

const project = await mkdtemp(join(tmpdir(), "client-package-"));
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};
const run = (command, args, options = {}) =>
  execFileSync(command, args, { cwd: project, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...options });

const PROGRAM = `import {
  type Ad,
  type ErrorDetail,
  type Job,
  type WebhookPayload,
  createApiClient,
  listAll,
  verifyWebhook,
  waitForJob,
} from "@classified-ads/client";

const [baseUrl = "", apiKey = ""] = process.argv.slice(2);
const api = createApiClient({ baseUrl, apiKey });
const client = await api.GET("/rest/v1/client");
const created = await api.POST("/rest/v1/users", {
  body: { externalUserId: Date.now() % 1_000_000_000, email: "verkoper@example.nl", lastName: "Bakker", cellular: "0612345678" },
});
if (created.error) console.error(created.error.errors);
const userId = created.data?.data.userId ?? 0;
// Read right after the write: the client carries the write's bookmark.
const read = await api.GET("/rest/v1/users/{userId}", { params: { path: { userId } } });
// A publish without "images" (it has a default) type-checks; the refusal is typed too.
const publish = await api.POST("/rest/v1/publish", { body: { userId, adId: 999999999, portal: "website" } });
const problems: ErrorDetail[] = publish.error?.errorDetails ?? [];
// Two ads, walked by the iterator a page of one at a time (the ads list follows nextCursor).
for (const [externalAdId, title] of ["Eiken eettafel", "Grenen kast"].entries())
  await api.POST("/rest/v1/ads", {
    body: { userId, externalAdId: externalAdId + 1, categoryId: 9301, title, description: "Zo goed als nieuw", price: { model: "fixed", price: 45000 } },
  });
const listed: Ad[] = [];
for await (const ad of listAll(api, "/rest/v1/ads", { query: { userId, itemsPerPage: 1 } })) listed.push(ad as Ad);
// A job to wait for: the retry of a job that does not exist is refused, so wait for an unknown one.
const waited: Job | string = await waitForJob(api, 999999999, { timeoutMs: 1000 }).catch((e: Error) => e.name);
// A payload of a known type narrows to that event's data.
const describe = (payload: WebhookPayload) =>
  payload.type === "publish.active" ? payload.data.data.remoteAdId : payload.type;
let verified = "refused";
try {
  describe(verifyWebhook("whsec_c2VjcmV0", { "webhook-id": "evt_1", "webhook-timestamp": "0", "webhook-signature": "v1,x" }, "{}"));
  verified = "accepted";
} catch {}
console.log(JSON.stringify({
  client: client.data?.data.name,
  created: created.response.status,
  readBack: read.data?.data[0]?.userId === userId,
  refusal: problems[0]?.code,
  listed: listed.map((ad) => ad.title),
  waited,
  verified,
}));
`;

const MISSING_FIELD = `import { createApiClient } from "@classified-ads/client";

const api = createApiClient({ baseUrl: "http://localhost", apiKey: "k" });
await api.POST("/rest/v1/publish", { body: { userId: 1, adId: 2 } });
`;

let dev;
try {
  await mkdir(join(REPO, "test", "screenshots"), { recursive: true });
  const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", project], {
    cwd: join(REPO, "client"),
    encoding: "utf8",
  });
  const tarball = join(project, packed.trim().split("\n").at(-1));
  const files = run("tar", ["-tzf", tarball]);
  check(
    ["package/dist/index.js", "package/dist/index.d.ts", "package/dist/schema.d.ts"].every((f) => files.includes(f)),
    "the tarball holds the built JavaScript, its declarations and the schema",
  );

  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "integration", private: true, type: "module" }),
  );
  const tsconfig = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023", "DOM"],
      strict: true,
      skipLibCheck: false,
      types: ["node"],
      outDir: "out",
    },
  };
  await writeFile(
    join(project, "tsconfig.json"),
    JSON.stringify({ ...tsconfig, files: ["program.ts", "roundTrip.ts"] }),
  );
  await writeFile(join(project, "roundTrip.ts"), await readFile(join(REPO, "test/outside/programs/roundTrip.ts")));
  await writeFile(join(project, "tsconfig.missing.json"), JSON.stringify({ ...tsconfig, files: ["missing.ts"] }));
  await writeFile(join(project, "program.ts"), PROGRAM);
  await writeFile(join(project, "missing.ts"), MISSING_FIELD);
  // As the quickstart installs it: the client, tsx to run TypeScript, TypeScript to check it, Node's types
  // for process.env.
  run("npm", ["install", "--no-audit", "--no-fund", "--silent", tarball, "tsx", "typescript", "@types/node@24"]);
  const installed = JSON.parse(
    await readFile(join(project, "node_modules", "@classified-ads", "client", "package.json")),
  );
  check(
    installed.dependencies?.["openapi-fetch"] !== undefined && installed.dependencies?.standardwebhooks !== undefined,
    "installs with openapi-fetch and standardwebhooks as its dependencies",
  );

  // The quickstart's program type-checks with the command its first line prints, in the project the
  // quickstart sets up.
  const quickstart = await readFile(join(REPO, "docs/quickstart.md"), "utf8");
  const program = /```ts\n(\/\/ publish\.ts:.*type-check with `(npx tsc [^`]+)`[\s\S]*?)```/.exec(quickstart);
  let typeChecked = false;
  if (program?.[1] && program[2]) {
    // A folder as the quickstart's `npm init` leaves it (no tsconfig.json in it or above), with the
    // packages the quickstart installs (the project's).
    const folder = await mkdtemp(join(tmpdir(), "quickstart-"));
    await symlink(join(project, "node_modules"), join(folder, "node_modules"));
    await writeFile(join(folder, "package.json"), JSON.stringify({ name: "my-integration", type: "module" }));
    await writeFile(join(folder, "publish.ts"), program[1]);
    const [npx, ...args] = program[2].split(" ");
    try {
      run(npx, args, { cwd: folder });
      typeChecked = true;
    } catch (error) {
      console.error(error.stdout);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }
  check(typeChecked, `the quickstart's program type-checks as it says (${program?.[2] ?? "no command printed"})`);

  // The previous release's programs type-check against this client (docs/versioning.md).
  await checkPreviousPrograms({ repo: REPO, project, tsc: COMPILERS["TypeScript 7"], check });

  for (const [compiler, tsc] of Object.entries(COMPILERS)) {
    let compiled = true;
    try {
      run(process.execPath, [tsc, "-p", "tsconfig.json"]);
    } catch (error) {
      compiled = false;
      console.error(error.stdout);
    }
    check(
      compiled,
      `${compiler}: a program using its named types, listAll, waitForJob and verifyWebhook, and the round trip, type-check and compile`,
    );
    let refused = false;
    try {
      run(process.execPath, [tsc, "-p", "tsconfig.missing.json", "--noEmit"]);
    } catch (error) {
      refused = /portal/.test(error.stdout);
    }
    check(refused, `${compiler}: a publish call without portal does not compile`);
  }

  // The docs' programs and requests name http://localhost:8787, so the server runs there, on a state of
  // its own (D1, the simulator's accounts): every run starts as a clean clone does.
  const state = join(project, "state");
  dev = await startDev(DEV_LOG, 8787, ["--persist-to", state]);
  const output = run("node", ["out/program.js", dev.origin, "dev-partner-key"]);
  const result = JSON.parse(output.trim().split("\n").at(-1));
  check(result.client === "dev-partner", `plain node runs it against npm run dev (${output.trim()})`);
  check(result.created === 200 && result.readBack, "it creates a user and reads it back right away");
  check(result.refusal === "ad_not_found", "a refusal comes back typed, with its code");
  check(
    JSON.stringify(result.listed) === JSON.stringify(["Eiken eettafel", "Grenen kast"]),
    `listAll walks the user's ads page by page (${JSON.stringify(result.listed)})`,
  );
  check(result.waited === "ApiError", `waitForJob throws the API's error for an unknown job (${result.waited})`);
  check(result.verified === "refused", "verifyWebhook refuses a forged signature");

  // `npm run marketplace` pointed where nothing answers says how to name the server's address.
  let unanswered = "";
  try {
    run("node", [join(REPO, "scripts/marketplace.mjs"), "1", "--origin", "http://localhost:9"], { cwd: REPO });
  } catch (error) {
    unanswered = error.stderr;
  }
  check(
    /^nothing answers at http:\/\/localhost:9: pass the address npm run dev serves with --origin/.test(unanswered),
    `npm run marketplace names --origin when nothing answers (${unanswered.trim()})`,
  );

  const roundTrip = run("node", ["out/roundTrip.js", dev.origin, "dev-partner-key"]);
  const { written } = JSON.parse(roundTrip.trim().split("\n").at(-1));
  check(written.length === 10, `each resource read is written back as read, without casts: ${written.join(", ")}`);

  await runDocs({
    repo: REPO,
    project,
    tsc: COMPILERS["TypeScript 7"],
    check,
    env: {
      ...process.env,
      // The scripts the docs run (npm run client, npm run marketplace) use the server's state.
      D1_PERSIST_TO: state,
      API_KEY: "dev-partner-key",
      WEBHOOK_SECRET: "whsec_ZG9jcy1leGFtcGxlLXNlY3JldC0zMmJ5dGVzISE=",
    },
  });
} catch (error) {
  failures.push(String(error));
  console.error(error.stderr ?? error);
} finally {
  await dev?.stop();
  await rm(project, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`\n${failures.length} client package check(s) failed`);
  process.exit(1);
}
console.log("\nthe packed client installs, type-checks and runs outside the repository");
process.exit(0);
