// npm run feed-server -- <file> [port]: a dealer's feed for `npm run dev`, served at http://localhost:<port>/
// (8791 by default) with an ETag and Last-Modified, answering a conditional fetch of an unchanged file 304.
// The file is read at every fetch: change it, and the next fetch gets it whole.
import { createHash } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { createServer } from "node:http";

const [file, port = "8791"] = process.argv.slice(2);
if (!file) {
  console.error("usage: npm run feed-server -- <file> [port]");
  process.exit(2);
}
const TYPES = { csv: "text/csv", json: "application/json", ndjson: "application/x-ndjson" };

createServer(async (request, response) => {
  const [body, { mtime }] = await Promise.all([readFile(file), stat(file)]);
  const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 16)}"`;
  const lastModified = new Date(Math.floor(mtime.getTime() / 1000) * 1000).toUTCString();
  const unchanged =
    request.headers["if-none-match"] === etag ||
    (!request.headers["if-none-match"] && request.headers["if-modified-since"] === lastModified);
  const type = TYPES[file.split(".").pop() ?? ""] ?? "text/plain";
  console.log(`${request.method} ${request.url}: ${unchanged ? 304 : 200}`);
  response.writeHead(unchanged ? 304 : 200, { ETag: etag, "Last-Modified": lastModified, "Content-Type": type });
  response.end(unchanged ? undefined : body);
}).listen(Number(port), "127.0.0.1", () => console.log(`serving ${file} on http://localhost:${port}/`));
