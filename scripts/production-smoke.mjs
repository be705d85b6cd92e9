// The production Worker as deployed (wrangler.toml's env.production: the entry and its body in modules of
// their own, scripts/build-worker.mjs) run by `wrangler dev` against a local state of its own: its first
// requests, sent at once, load the body's modules and answer as the contract says (the OpenAPI document, a
// 401 without a key). Run by `npm run build:check`.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

const [port, inspectorPort] = [await freePort(), await freePort()];
const state = mkdtempSync(join(tmpdir(), "production-smoke-"));
const server = spawn(
  "npx",
  ["wrangler", "dev", "--env", "production", "--ip", "127.0.0.1", "--port", String(port)].concat([
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    state,
  ]),
  {
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  },
);
let output = "";
server.stdout.on("data", (chunk) => (output += chunk));
server.stderr.on("data", (chunk) => (output += chunk));

const origin = `http://127.0.0.1:${port}`;
/** Requests sent at once as the isolate's first: each waits on the body's first import. */
const AT_ONCE = 20;
const failures = [];
try {
  for (let waited = 0; !output.includes("Ready on"); waited += 1) {
    if (server.exitCode !== null || waited > 240) throw new Error("wrangler dev never became ready");
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const answers = await Promise.all(
    Array.from({ length: AT_ONCE }, async (_, at) => {
      const path = at % 2 === 0 ? "/rest/v1/openapi.json" : "/rest/v1/client/";
      const response = await fetch(`${origin}${path}`);
      return { path, status: response.status, body: await response.json() };
    }),
  );
  for (const { path, status, body } of answers) {
    const expected =
      path === "/rest/v1/openapi.json"
        ? status === 200 && String(body.openapi).startsWith("3.1")
        : status === 401 && body.errorDetails?.[0]?.code === "missing_api_key";
    if (!expected) failures.push(`GET ${path}: ${status} ${JSON.stringify(body).slice(0, 200)}`);
  }
} catch (error) {
  failures.push(String(error));
} finally {
  process.kill(-server.pid, "SIGTERM");
  rmSync(state, { recursive: true, force: true });
}
if (failures.length > 0) {
  console.error(`${output}\nthe production Worker failed:\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`production Worker: its modules load and answer ${AT_ONCE} first requests sent at once`);
