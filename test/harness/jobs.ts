// Publish jobs written and run directly, with or without their queue messages.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { getDb } from "../../src/db/client";
import { publishJobs } from "../../src/db/schema";
import type { Env, ShardEnv } from "../../src/env";
import { type Decision, publishMessage, runPublishJobs } from "../../src/services/publishing";
import { jobContext } from "../../src/services/shared";
import { defined } from "./api";

/**
 * The Worker's bindings with a queue that drops every message: rows are written and nothing is
 * delivered (a message lost to a crash, or a job held still while a test looks at it).
 */
export const withoutMessages = <E extends Env>(base: E = env as unknown as E): E =>
  ({ ...base, JOBS: { send: async () => {}, sendBatch: async () => {} } }) as E;

/**
 * Runs one item's job as the consumer does, from the message the API sends for it; throws what would
 * make the queue retry the message.
 */
export async function runPublishJob(base: ShardEnv, itemId: number, requestId?: string): Promise<void> {
  const item = await getDb(base.shard.d1).select().from(publishJobs).where(eq(publishJobs.id, itemId)).get();
  const [outcome] = await runPublishJobs(jobContext(base, requestId), {
    messages: [publishMessage(defined(item), requestId)],
  });
  if (outcome?.status === "rejected") throw outcome.reason;
}

/** Placement intents for ads on portal_a, as POST /publish/ writes them. */
export const placements = (userId: number, adIds: number[], cost = 300): Decision[] =>
  adIds.map((adId) => ({
    adId,
    userId,
    portal: "portal_a",
    action: "publish",
    images: true,
    cost,
    payerId: userId,
    description: `plaatsen portal_a adId ${adId}`,
  }));
