import { and, eq } from "drizzle-orm";
import { settledClient } from "../../db/directory";
import { byTurns } from "../../db/fairShare";
import { inList } from "../../db/inList";
import { adPublications, ads, adUpdateRequests, users } from "../../db/schema";
import type { JobContext } from "../shared/context";
import { type Decision, queueJobs } from "./jobs/queue";

/**
 * The outbox of updates asked for by image changes and manufacturer batches (ad_update_requests):
 * each (ad, portal) still active there gets one queued update; the requests are then removed. At most
 * `limit` a run, taken by turns of client. Answers how many updates were queued.
 */
export async function flushUpdateRequests(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db } = ctx;
  const requests = (
    await db
      .select({ request: adUpdateRequests })
      .from(adUpdateRequests)
      .innerJoin(ads, eq(ads.id, adUpdateRequests.adId))
      .innerJoin(users, eq(users.id, ads.userId))
      .where(settledClient(users.clientId))
      .orderBy(...byTurns(users.clientId, adUpdateRequests.id))
      .limit(input.limit)
  ).map((row) => row.request);
  if (requests.length === 0) return 0;
  const adIds = [...new Set(requests.map((r) => r.adId))];
  const active = await db
    .select({ adId: adPublications.adId, portal: adPublications.portal, userId: ads.userId })
    .from(adPublications)
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .where(and(inList(adPublications.adId, adIds), eq(adPublications.active, true)));
  const key = (p: { adId: number; portal: string }) => `${p.adId}:${p.portal}`;
  const wanted = new Set(requests.map(key));
  const jobs: Decision[] = active
    .filter((publication) => wanted.has(key(publication)))
    .map((publication) => ({
      ...publication,
      action: "update",
      images: true,
      cost: 0,
      payerId: publication.userId,
      description: "",
    }));
  const queued = await queueJobs(ctx, jobs);
  await db.delete(adUpdateRequests).where(
    inList(
      adUpdateRequests.id,
      requests.map((r) => r.id),
    ),
  );
  return queued.filter((q) => q?.created).length;
}
