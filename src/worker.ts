// The Worker: the API, the queue consumer and the cron. Production deploys this entry; development,
// tests and the sandbox deploy src/index.ts, which also builds the OpenAPI document from the routes.
import { app } from "./app";
import { runScheduled } from "./cron";
import type { Env } from "./env";
import { handleJobs } from "./jobs/consumer";
import type { JobMessage } from "./services/shared";

export { RateLimiter } from "./durable/RateLimiter";
export { UserTokens } from "./durable/UserTokens";
export { ClientLanes } from "./jobs/clientLanes";

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    await handleJobs(batch, env);
  },

  async scheduled(controller, env) {
    await runScheduled(env, controller.scheduledTime);
  },
} satisfies ExportedHandler<Env, JobMessage>;
