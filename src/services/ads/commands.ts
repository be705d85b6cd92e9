// An ad's status, its removal, and its settings per portal.
import { eq } from "drizzle-orm";
import { adSettings, ads } from "../../db/schema";
import { deleteObjects } from "../../lib/media";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions } from "../shared/revisions";
import { type AdRow, adWriteRevisions, imageObjectsOf, requireAd } from "./access";
import { detailsCopy, upsertSettings } from "./adRows";
import type { CreateAdInput } from "./schemas";

/** PATCH /ads/: status only. Archiving does not unpublish. */
export async function setAdStatus(
  ctx: ServiceContext,
  input: { adId: number; status: AdRow["status"] },
): Promise<number> {
  const { db, caller } = ctx;
  const ad = await requireAd(db, caller, input.adId);
  await db.batch([
    db.update(ads).set({ status: input.status, updatedAt: nowIso() }).where(eq(ads.id, ad.id)),
    bumpRevisions(db, adWriteRevisions(ad.userId), ctx.precondition),
  ]);
  return ad.id;
}

/** Removes the ad, what hangs below it and its image files; a listing on a portal stays (unpublish first). */
export async function deleteAd(ctx: ServiceContext, adId: number): Promise<void> {
  const { db, caller } = ctx;
  const storage = ctx.env.MEDIA;
  const ad = await requireAd(db, caller, adId);
  const objects = await imageObjectsOf(db, [ad.id]);
  await db.batch([
    db.delete(ads).where(eq(ads.id, ad.id)),
    bumpRevisions(db, adWriteRevisions(ad.userId), ctx.precondition),
  ]);
  await deleteObjects(storage, objects);
}

// ---- ad settings resource ----

export async function getAdSettings(ctx: ServiceContext, adId: number) {
  const { db, caller } = ctx;
  await requireAd(db, caller, adId);
  const rows = await db.select().from(adSettings).where(eq(adSettings.adId, adId)).orderBy(adSettings.portal);
  return { adId, settings: rows.map(({ adId: _a, ...s }) => s) };
}

export async function replaceAdSettings(
  ctx: ServiceContext,
  input: { adId: number; settings: NonNullable<CreateAdInput["settings"]> },
) {
  const { db, caller } = ctx;
  const ad = await requireAd(db, caller, input.adId);
  await db.batch([
    bumpRevisions(db, adWriteRevisions(ad.userId), ctx.precondition),
    db.update(ads).set({ updatedAt: nowIso() }).where(eq(ads.id, ad.id)),
    ...upsertSettings(db, ad.id, input.settings),
    detailsCopy(db, ad.id),
  ]);
  return getAdSettings(ctx, ad.id);
}
