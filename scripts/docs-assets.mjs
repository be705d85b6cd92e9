// Copies the pinned @scalar/api-reference browser bundle into the Worker's static assets
// (public/docs/scalar.js, git-ignored), so /docs never loads code from a CDN. Runs on npm install.
import { copyFile, mkdir } from "node:fs/promises";

// The package exports no path to its browser bundle, so it is read from the installed package's folder.
await mkdir("public/docs", { recursive: true });
await copyFile("node_modules/@scalar/api-reference/dist/browser/standalone.js", "public/docs/scalar.js");
