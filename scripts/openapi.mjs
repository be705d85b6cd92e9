// Writes the served OpenAPI document to openapi/openapi.json (npm run openapi): starts `wrangler dev`
// on a spare port, reads /rest/v1/openapi.json without its per-request `servers`, and stops it again.
// test/api/openapi.test.ts fails while the committed file differs from what the Worker serves.
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";

const port = await new Promise((resolve) => {
  const server = createServer().listen(0, () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const dev = spawn("npx", ["wrangler", "dev", "--port", String(port), "--show-interactive-dev-session=false"], {
  stdio: ["ignore", "ignore", "inherit"],
  detached: true,
});
try {
  let document;
  for (let attempt = 0; attempt < 120 && !document; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    document = await fetch(`http://127.0.0.1:${port}/rest/v1/openapi.json`)
      .then((response) => (response.ok ? response.json() : undefined))
      .catch(() => undefined);
  }
  if (!document) throw new Error("wrangler dev did not serve /rest/v1/openapi.json within a minute");
  // Per request the Worker names its own origin; the committed document keeps the relative default.
  document.servers = [{ url: "/", description: "The deployment serving this document" }];
  await mkdir("openapi", { recursive: true });
  await writeFile("openapi/openapi.json", `${JSON.stringify(document, null, 2)}\n`);
  console.log(`openapi/openapi.json: ${Object.keys(document.paths).length} paths`);
} finally {
  process.kill(-dev.pid, "SIGTERM");
}
