// The Worker with the bundled marketplace simulator (development, tests, sandbox). Production deploys
// src/worker.ts, which leaves the simulator out of the bundle, and serves the OpenAPI document as a
// static asset instead of building it (see src/routes/document.ts).
import { app } from "./app";
import type { Env } from "./env";
import { DOCUMENT_PATH, documentAnswer } from "./routes/document";
import type { Job } from "./services/shared";
import worker from "./worker";

export { MarketplaceSimulator } from "./portals/simulator";
export { RateLimiter, UserTokens } from "./worker";

const answerDocument = documentAnswer(app);

export default {
  ...worker,
  fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    if (request.method === "GET" && pathname.replace(/\/$/, "") === DOCUMENT_PATH) return answerDocument(request);
    return worker.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env, Job>;
