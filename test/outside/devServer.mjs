// The suites that run outside the Workers pool (the browser test, the client package test) call the API
// as a newcomer does: `npm run dev` on a spare port, in a terminal (`script`, from Debian's util-linux,
// gives it one) whose input stays open and silent, so a prompt would wait for ever and the start would
// time out. Its output goes to `log`.
import { spawn } from "node:child_process";
import { open } from "node:fs/promises";
import { createServer } from "node:net";

const sparePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/**
 * Starts `npm run dev` (on `port`, or a spare one) and waits until it serves the OpenAPI document; answers
 * its origin, the document and `stop`.
 */
export async function startDev(log, port, extraArgs = []) {
  port ??= await sparePort();
  if (
    await fetch(`http://localhost:${port}/`).then(
      () => true,
      () => false,
    )
  )
    throw new Error(`port ${port} is taken: stop what listens there (another npm run dev?) and run again`);
  const origin = `http://localhost:${port}`;
  const output = await open(log, "w");
  const command = `npm run dev -- --port ${port} ${extraArgs.join(" ")}`;
  const dev = spawn("script", ["-qfec", command, "/dev/null"], {
    stdio: ["pipe", output.fd, output.fd],
    detached: true,
  });
  const stop = async () => {
    try {
      process.kill(-dev.pid, "SIGTERM");
    } catch {}
    await output.close();
  };
  let document;
  for (let attempt = 0; attempt < 240 && !document; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    document = await fetch(`${origin}/rest/v1/openapi.json`)
      .then((response) => (response.ok ? response.json() : undefined))
      .catch(() => undefined);
  }
  if (!document) {
    await stop();
    throw new Error(`npm run dev did not answer on ${origin} within two minutes (its output: ${log})`);
  }
  return { origin, document, stop };
}
