import { app } from "./app";
import { runScheduled } from "./cron";
import type { Env } from "./env";
import { handleJobs } from "./jobs/consumer";
import type { Job } from "./jobs/types";
import { configureMedia } from "./lib/media";

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
