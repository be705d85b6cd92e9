// Fails on a file of src/ over MAX_LINES lines (the runtime types that `wrangler types` generates aside):
// a room that grew past it splits by the steps it holds (ARCHITECTURE.md).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const MAX_LINES = 400;
const GENERATED = new Set(["src/worker-configuration.d.ts"]);

const files = readdirSync("src", { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
  .map((entry) => join(entry.parentPath, entry.name))
  .filter((path) => !GENERATED.has(path));
const over = files
  .map((path) => ({ path, lines: readFileSync(path, "utf8").split("\n").length - 1 }))
  .filter(({ lines }) => lines > MAX_LINES);
for (const { path, lines } of over) console.error(`${path}: ${lines} lines (at most ${MAX_LINES})`);
if (over.length > 0) process.exit(1);
console.log(`${files.length} files of src/, none over ${MAX_LINES} lines`);
