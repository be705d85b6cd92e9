// npm run webhook-receiver -- <whsec_… secret> [port]: a local webhook receiver for `npm run dev`.
// Register it with POST /rest/v1/webhooks/ {"url": "http://localhost:8790/hooks"}, start it with the secret
// the answer showed, and every delivery is verified (Standard Webhooks) and printed.
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const [secret, port = "8790"] = process.argv.slice(2);
if (!secret?.startsWith("whsec_")) {
  console.error("usage: npm run webhook-receiver -- <whsec_… secret> [port]");
  process.exit(2);
}
const verifier = new Webhook(secret);

createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    try {
      const event = verifier.verify(body, request.headers);
      console.log(`${request.headers["webhook-id"]} ${event.type} ${JSON.stringify(event.data)}`);
      response.writeHead(204).end();
    } catch (error) {
      console.log(`refused (${error.message}): ${body.slice(0, 200)}`);
      response.writeHead(400).end();
    }
  });
}).listen(Number(port), "127.0.0.1", () => console.log(`verifying webhooks on http://localhost:${port}/hooks`));
