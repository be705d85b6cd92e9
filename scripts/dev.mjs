// npm run dev: local D1 migrations and seed, then `wrangler dev` with the arguments given after `--`.
// Image URLs must be absolute in work done outside a request too (the publish job sends them to a
// marketplace), so the public media base is set to this server's own address: the port given with
// `--port` (default 8787), unless MEDIA_BASE_URL is passed already.
import { spawnSync } from "node:child_process";

const args = process.argv.slice(2);
const setup = spawnSync("npm", ["run", "db:setup", "--silent"], { stdio: "inherit" });
if (setup.status !== 0) process.exit(setup.status ?? 1);

const portArg = args.findIndex((arg) => arg === "--port" || arg.startsWith("--port="));
const port = portArg < 0 ? "8787" : args[portArg].includes("=") ? args[portArg].split("=")[1] : args[portArg + 1];
const mediaBase = args.some((arg) => arg.includes("MEDIA_BASE_URL"))
  ? []
  : ["--var", `MEDIA_BASE_URL:http://localhost:${port}/media/`];
const dev = spawnSync("npx", ["wrangler", "dev", "--test-scheduled", ...mediaBase, ...args], { stdio: "inherit" });
process.exit(dev.status ?? 1);
