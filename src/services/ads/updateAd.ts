// PUT /ads/: an ad's fields, attributes and settings replaced, in one D1 batch.
import { eq } from "drizzle-orm";
import { ads } from "../../db/schema";
import { DomainError, detail } from "../../lib/errors";
import { AD_DESCRIPTION_TAGS, sanitizeHtml } from "../../lib/html";
import { nowIso } from "../../lib/time";
import { loadCatalogue } from "../catalogue/catalogue";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { requireUnchanged } from "../shared/fixedFields";
import { bumpRevisions } from "../shared/revisions";
import { adWriteRevisions, requireAd } from "./access";
import { checkCategory, checkOwnership, descriptionProblems } from "./adChecks";
import { detailsCopy, priceColumns, replaceAttributes, syncedAs, upsertSettings } from "./adRows";
import { checkAttributes } from "./attributes";
import type { UpdateAdInput } from "./schemas";

/** PUT /ads/: the ad's id. A stock sync passes its item's `syncHash` (as `createAd`). */
export async function updateAd(ctx: ServiceContext, input: UpdateAdInput & { syncHash?: string }): Promise<number> {
  const { db, caller } = ctx;
  const ad = await requireAd(db, caller, input.adId);
  requireUnchanged(input, ad, ["userId", "externalAdId", "categoryId"]);
  const user = await requireUser(db, caller, ad.userId);
  const [catalogue, ownership] = await Promise.all([loadCatalogue(db), checkOwnership(db, ad.userId, input)]);
  const problems = [...ownership];
  if (ad.categoryId !== null) problems.push(...checkCategory(catalogue, ad.categoryId, input.misc?.licensePlate));
  const attributes = input.attributes
    ? checkAttributes(catalogue, input.attributes, {
        categoryId: ad.categoryId ?? 0,
        mode: "update",
        gpsrRequired: Boolean(user.companyName) && ad.manufacturerId === null,
      })
    : { rows: [], problems: [] };
  problems.push(...attributes.problems.map((problem) => detail("validation_failed", problem)));
  const changes: Partial<typeof ads.$inferInsert> = { updatedAt: nowIso(), ...syncedAs(input.syncHash) };
  if (input.description !== undefined) {
    changes.description = await sanitizeHtml(input.description, AD_DESCRIPTION_TAGS);
    problems.push(...descriptionProblems(changes.description));
  }
  if (problems.length > 0) throw new DomainError(problems);

  for (const key of ["contactId", "folderId", "status", "type", "title", "imagetext", "url", "provider"] as const) {
    if (input[key] !== undefined) Object.assign(changes, { [key]: input[key] });
  }
  if (input.price) Object.assign(changes, priceColumns(input.price));
  if (input.misc?.licensePlate !== undefined) changes.licensePlate = input.misc.licensePlate;

  await db.batch([
    db.update(ads).set(changes).where(eq(ads.id, ad.id)),
    ...replaceAttributes(
      db,
      ad,
      (input.attributes ?? []).map((set) => set.portal),
      attributes.rows,
    ),
    ...upsertSettings(db, ad.id, input.settings ?? []),
    ...(input.attributes || input.settings ? [detailsCopy(db, ad.id)] : []),
    bumpRevisions(db, adWriteRevisions(ad.userId), ctx.precondition),
  ]);
  return ad.id;
}
