// The Worker's body, loaded by src/index.ts on an isolate's first invocation and kept for its life: the
// API (with its OpenAPI document, built from the routes on its first request), the queue consumer and
// the cron. Each runs with job queues that hand what is sent on them straight to the clients' lanes
// (src/jobs/handOver.ts).
import { app } from "./app";
import { runScheduledOnEveryShard } from "./cron";
import type { Env } from "./env";
import { handleJobs } from "./jobs/consumer";
import { handingJobsToLanes } from "./jobs/handOver";
import { DOCUMENT_PATH, documentResponder } from "./routes/document";
import type { JobMessage } from "./services/shared";

const serveDocument = documentResponder(app);

export const worker = {
  fetch(request: Request, env: Env, ctx: ExecutionContext) {
    const { pathname } = new URL(request.url);
    if (request.method === "GET" && pathname.replace(/\/$/, "") === DOCUMENT_PATH) return serveDocument(request);
    return app.fetch(request, handingJobsToLanes(env), ctx);
  },

  async queue(batch, env) {
    await handleJobs(batch, handingJobsToLanes(env));
  },

  async scheduled(controller, env) {
    await runScheduledOnEveryShard(handingJobsToLanes(env), controller.scheduledTime);
  },
} satisfies ExportedHandler<Env, JobMessage>;
