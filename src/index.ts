import { app } from "./app";
import { runScheduled } from "./cron";
import type { Env } from "./env";
import { handleJobs } from "./jobs/consumer";
import { configureMedia } from "./lib/media";
import type { Job } from "./services/shared/jobMessages";

export { RateLimiter } from "./durable/RateLimiter";
export { UserTokens } from "./durable/UserTokens";
export { MarketplaceSimulator } from "./portals/simulator";

export default {
  fetch(request, env, ctx) {
    configureMedia(env, new URL(request.url).origin);
    return app.fetch(request, env, ctx);
  },

  async queue(batch, env, ctx) {
    configureMedia(env);
    await handleJobs(batch, env, ctx);
  },

  async scheduled(controller, env) {
    configureMedia(env);
    await runScheduled(env, controller.scheduledTime);
  },
} satisfies ExportedHandler<Env, Job>;
