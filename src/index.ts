// The Worker's entry, the same in every environment. Its global scope holds only the entry points: the
// handlers load the Worker's body (src/worker.ts: the API with its routes and their schemas, the queue
// consumer, the cron) on first use, and the Durable Objects load their work the same way, so a new
// isolate's startup parses and runs a few kilobytes. Production uploads the body as modules of their
// own (scripts/build-worker.mjs), which the runtime compiles only when they are first imported.
import type { Env } from "./env";
import { onFirstUse } from "./lib/onFirstUse";
import type { JobMessage } from "./services/shared";

export { ShardCron } from "./cron/shardCron";
export { RateLimiter } from "./durable/RateLimiter";
export { UserTokens } from "./durable/UserTokens";
export { ClientLanes } from "./jobs/clientLanes";

const loadBody = onFirstUse(() => import("./worker"));
const body = async () => (await loadBody()).worker;

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext) {
    return (await body()).fetch(request, env, ctx);
  },

  async queue(batch, env) {
    await (await body()).queue(batch, env);
  },

  async scheduled(controller, env) {
    await (await body()).scheduled(controller, env);
  },
} satisfies ExportedHandler<Env, JobMessage>;
