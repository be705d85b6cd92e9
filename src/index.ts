// The Worker of development, tests and the sandbox: it builds the OpenAPI document from the routes.
// Production deploys src/worker.ts, which serves the committed document as a static asset instead
// (see src/routes/document.ts).
import { app } from "./app";
import type { Env } from "./env";
import { DOCUMENT_PATH, documentResponder } from "./routes/document";
import type { JobMessage } from "./services/shared";
import worker from "./worker";

export { ClientLanes, RateLimiter, UserTokens } from "./worker";

const serveDocument = documentResponder(app);

export default {
  ...worker,
  fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (request.method === "GET" && pathname.replace(/\/$/, "") === DOCUMENT_PATH) return serveDocument(request);
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env, JobMessage>;
