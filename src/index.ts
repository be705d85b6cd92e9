import { app } from "./app";
import type { Env } from "./env";

export { RateLimiter } from "./durable/RateLimiter";
export { UserTokens } from "./durable/UserTokens";

export default {
  fetch: app.fetch,

  async queue(batch: MessageBatch<unknown>, _env: Env): Promise<void> {
    // Job handlers arrive with the images and publishing work; until then a job is acknowledged and logged.
    for (const message of batch.messages) {
      console.log(JSON.stringify({ level: "info", msg: "job received", queue: batch.queue, id: message.id }));
      message.ack();
    }
  },

  async scheduled(controller: ScheduledController, _env: Env): Promise<void> {
    console.log(JSON.stringify({ level: "info", msg: "cron", cron: controller.cron, at: controller.scheduledTime }));
  },
} satisfies ExportedHandler<Env>;
