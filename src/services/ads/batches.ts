import { and, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { ads, jobIsOpen, publishJobs } from "../../db/schema";
import { detail, type ErrorDetail } from "../../lib/errors";
import { deleteObjects } from "../../lib/media";
import { nowIso } from "../../lib/time";
import type { Caller } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions } from "../shared/revisions";
import { type AdRow, adWriteRevisions, imageObjectsOf, visibleAds } from "./access";
import type { BatchItemResult } from "./schemas";

const failedJob = (adId: number, problem: ErrorDetail): BatchItemResult => ({
  adId,
  result: false,
  errors: [problem.message],
  errorDetails: [problem],
});

/** Resolves a batch's ids: the ones that may be changed, and a failed item for every other id. */
async function resolveBatch(db: Db, caller: Caller, input: { userId?: number | undefined; adId: number[] }) {
  const ids = [...new Set(input.adId)];
  const visible = await visibleAds(db, caller, ids);
  const results = new Map<number, BatchItemResult>();
  const ok: AdRow[] = [];
  for (const id of ids) {
    const ad = visible.get(id);
    if (!ad) results.set(id, failedJob(id, detail("ad_not_found", `adId: ad ${id} not found`)));
    else if (input.userId !== undefined && ad.userId !== input.userId) {
      results.set(id, failedJob(id, detail("ad_not_found", `adId: ad ${id} does not belong to user ${input.userId}`)));
    } else {
      ok.push(ad);
      results.set(id, { adId: id, result: true, errors: [], errorDetails: [] });
    }
  }
  const revisionKeys = [...new Set(ok.flatMap((ad) => adWriteRevisions(ad.userId)))];
  return { ids, ok, revisionKeys, results: () => ids.map((id) => results.get(id) as BatchItemResult) };
}

/** Batch writes a sync's ending makes: only ads with no publish job open (none in flight at a marketplace). */
type Guard = { unlessJobOpen?: boolean };

/** The batch's ads that may be written: those it resolved, and with `unlessJobOpen`, none with a job open. */
const writable = (ok: AdRow[], guard: Guard) =>
  and(
    inList(
      ads.id,
      ok.map((a) => a.id),
    ),
    guard.unlessJobOpen
      ? sql`NOT EXISTS (SELECT 1 FROM ${publishJobs} WHERE ${publishJobs.adId} = ${ads.id} AND ${jobIsOpen(publishJobs.status)})`
      : undefined,
  );

export async function patchAdsBatch(
  ctx: ServiceContext,
  input: { userId?: number | undefined; adId: number[]; status: AdRow["status"] } & Guard,
): Promise<BatchItemResult[]> {
  const { db, caller } = ctx;
  const batch = await resolveBatch(db, caller, input);
  if (batch.ok.length > 0) {
    await db.batch([
      db.update(ads).set({ status: input.status, updatedAt: nowIso() }).where(writable(batch.ok, input)),
      bumpRevisions(db, batch.revisionKeys, ctx.precondition),
    ]);
  }
  return batch.results();
}

export async function deleteAdsBatch(
  ctx: ServiceContext,
  input: { userId?: number | undefined; adId: number[] } & Guard,
): Promise<BatchItemResult[]> {
  const { db, caller } = ctx;
  const storage = ctx.env.MEDIA;
  const batch = await resolveBatch(db, caller, input);
  if (batch.ok.length > 0) {
    const objects = await imageObjectsOf(
      db,
      batch.ok.map((a) => a.id),
    );
    const [deleted] = await db.batch([
      db.delete(ads).where(writable(batch.ok, input)).returning({ id: ads.id }),
      bumpRevisions(db, batch.revisionKeys, ctx.precondition),
    ]);
    const gone = new Set(deleted.map((ad) => ad.id));
    await deleteObjects(
      storage,
      objects.filter((object) => gone.has(object.adId)),
    );
  }
  return batch.results();
}
