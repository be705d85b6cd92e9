import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { adAttributes, adSettings, ads, contacts, folders, userSettings, users } from "../../db/schema";
import { ApiError, badRequest } from "../../lib/errors";
import { AD_DESCRIPTION_TAGS, sanitizeHtml } from "../../lib/html";
import { nowIso } from "../../lib/time";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { deleteObjects, imageObjectsOf } from "../images/images";
import { requireUser, type Scope, visibleUsers } from "../shared/access";
import { bumpRevisions, USERS_SCOPE, userScope } from "../shared/revisions";
import { adWriteScopes, requireAd, visibleAds } from "./access";
import { type AttributeRowInput, checkAttributes } from "./attributes";
import type { CreateAdInput, UpdateAdInput } from "./schemas";
import { type AdRow, type AdView, adViews } from "./views";

export async function getAd(db: Db, scope: Scope, adId: number): Promise<AdView> {
  const [view] = await adViews(db, [await requireAd(db, scope, adId)], false);
  return view as AdView;
}

/** contactId and folderId must belong to the ad's user. */
async function checkOwnership(db: Db, userId: number, input: { contactId?: number | null; folderId?: number | null }) {
  const problems: string[] = [];
  const [contactRows, folderRows] = await db.batch([
    db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.userId, userId), eq(contacts.id, input.contactId ?? 0))),
    db
      .select({ id: folders.id })
      .from(folders)
      .where(and(eq(folders.userId, userId), eq(folders.id, input.folderId ?? 0))),
  ]);
  if (input.contactId && contactRows.length === 0)
    problems.push(`contactId: contact ${input.contactId} not found for user ${userId}`);
  if (input.folderId && folderRows.length === 0)
    problems.push(`folderId: folder ${input.folderId} not found for user ${userId}`);
  return problems;
}

function checkCategory(catalogue: Catalogue, categoryId: number, licensePlate: string | null | undefined): string[] {
  const category = catalogue.categories.get(categoryId);
  if (!category) return [`categoryId: category ${categoryId} not found`];
  if (licensePlate && !catalogue.groups.get(category.groupId)?.automotive) {
    return ["misc.licensePlate: only allowed in automotive categories"];
  }
  return [];
}

const priceColumns = (price: CreateAdInput["price"]) => ({
  priceModel: price.model,
  price: price.price ?? null,
  minimumBid: price.minimumBid ?? null,
  shippingCosts: price.shippingCosts ?? null,
  retail: price.retail ?? null,
});

function settingRows(adId: SQLValue, settings: NonNullable<CreateAdInput["settings"]>) {
  return settings.map((s) => ({
    adId,
    portal: s.portal,
    showcontact: s.showcontact ?? true,
    autoreplace: s.autoreplace ?? false,
    video: s.video ?? null,
  }));
}
type SQLValue = number | ReturnType<typeof sql>;

export async function createAd(db: Db, scope: Scope, input: CreateAdInput): Promise<AdView> {
  const user = await requireUser(db, scope, input.userId);
  const problems: string[] = [];
  if (scope.partner && input.externalAdId === undefined) problems.push("externalAdId: is required for partner clients");
  const [catalogue, ownership, defaults] = await Promise.all([
    loadCatalogue(db),
    checkOwnership(db, input.userId, input),
    db.select({ type: userSettings.type }).from(userSettings).where(eq(userSettings.userId, input.userId)).get(),
  ]);
  problems.push(...ownership, ...checkCategory(catalogue, input.categoryId, input.misc?.licensePlate));
  const attributes = checkAttributes(catalogue, input.attributes, {
    categoryId: input.categoryId,
    mode: "create",
    gpsrRequired: Boolean(user.companyName),
  });
  problems.push(...attributes.problems);
  if (problems.length > 0) throw badRequest(...problems);

  // One batch, one transaction: the ad and everything below it are stored together or not at all.
  // The rows below the ad take its id from the AUTOINCREMENT sequence inside that transaction.
  const newAdId = sql`(SELECT seq FROM sqlite_sequence WHERE name = 'ads')`;
  const [[created]] = await db.batch([
    db
      .insert(ads)
      .values({
        userId: input.userId,
        contactId: input.contactId ?? null,
        folderId: input.folderId ?? null,
        status: input.status ?? "active",
        externalAdId: input.externalAdId ?? null,
        type: input.type ?? defaults?.type ?? "supply",
        title: input.title,
        imagetext: input.imagetext ?? null,
        description: await sanitizeHtml(input.description, AD_DESCRIPTION_TAGS),
        categoryId: input.categoryId,
        url: input.url ?? null,
        ...priceColumns(input.price),
        licensePlate: input.misc?.licensePlate ?? null,
        provider: input.provider ?? null,
      })
      .returning({ id: ads.id }),
    ...insertAttributes(db, newAdId, attributes.rows),
    ...(input.settings?.length ? [db.insert(adSettings).values(settingRows(newAdId, input.settings))] : []),
    bumpRevisions(db, adWriteScopes(input.userId)),
  ]);
  return getAd(db, scope, (created as { id: number }).id);
}

/** Inserts in chunks that stay under D1's 100 bound parameters per statement. */
function insertAttributes(db: Db, adId: SQLValue, rows: AttributeRowInput[]): BatchItem<"sqlite">[] {
  const perStatement = 12;
  const statements: BatchItem<"sqlite">[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    statements.push(db.insert(adAttributes).values(rows.slice(i, i + perStatement).map((row) => ({ ...row, adId }))));
  }
  return statements;
}

export async function updateAd(db: Db, scope: Scope, input: UpdateAdInput): Promise<AdView> {
  const ad = await requireAd(db, scope, input.adId);
  const user = await requireUser(db, scope, ad.userId);
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
  problems.push(...attributes.problems);
  if (problems.length > 0) throw badRequest(...problems);

  const changes: Partial<typeof ads.$inferInsert> = { updatedAt: nowIso() };
  for (const key of ["contactId", "folderId", "status", "type", "title", "imagetext", "url", "provider"] as const) {
    if (input[key] !== undefined) Object.assign(changes, { [key]: input[key] });
  }
  if (input.description !== undefined) changes.description = await sanitizeHtml(input.description, AD_DESCRIPTION_TAGS);
  if (input.price) Object.assign(changes, priceColumns(input.price));
  if (input.misc?.licensePlate !== undefined) changes.licensePlate = input.misc.licensePlate;

  const replacedPortals = (input.attributes ?? []).map((a) => a.portal);
  await db.batch([
    db.update(ads).set(changes).where(eq(ads.id, ad.id)),
    ...(replacedPortals.length
      ? [db.delete(adAttributes).where(and(eq(adAttributes.adId, ad.id), inList(adAttributes.portal, replacedPortals)))]
      : []),
    ...insertAttributes(db, ad.id, attributes.rows),
    ...upsertSettings(db, ad.id, input.settings ?? []),
    bumpRevisions(db, adWriteScopes(ad.userId)),
  ]);
  return getAd(db, scope, ad.id);
}

function upsertSettings(db: Db, adId: number, settings: NonNullable<CreateAdInput["settings"]>): BatchItem<"sqlite">[] {
  return settingRows(adId, settings).map((row) =>
    db
      .insert(adSettings)
      .values(row)
      .onConflictDoUpdate({
        target: [adSettings.adId, adSettings.portal],
        set: { showcontact: row.showcontact, autoreplace: row.autoreplace, video: row.video },
      }),
  );
}

/** PATCH /ads/: status only. Archiving does not unpublish. */
export async function setAdStatus(
  db: Db,
  scope: Scope,
  input: { adId: number; status: AdRow["status"] },
): Promise<AdView> {
  const ad = await requireAd(db, scope, input.adId);
  await db.batch([
    db.update(ads).set({ status: input.status, updatedAt: nowIso() }).where(eq(ads.id, ad.id)),
    bumpRevisions(db, adWriteScopes(ad.userId)),
  ]);
  return getAd(db, scope, ad.id);
}

/** Removes the ad, what hangs below it and its image files; a listing on a portal stays (unpublish first). */
export async function deleteAd(db: Db, storage: R2Bucket, scope: Scope, adId: number): Promise<void> {
  const ad = await requireAd(db, scope, adId);
  const objects = await imageObjectsOf(db, [ad.id]);
  await db.batch([db.delete(ads).where(eq(ads.id, ad.id)), bumpRevisions(db, adWriteScopes(ad.userId))]);
  await deleteObjects(storage, objects);
}

export interface BatchItemResult {
  adId: number;
  result: boolean;
  errors: string[];
}

/** Resolves a batch's ids: the ones that may be changed, and a failed item for every other id. */
async function resolveBatch(db: Db, scope: Scope, input: { userId?: number | undefined; adId: number[] }) {
  const ids = [...new Set(input.adId)];
  const visible = await visibleAds(db, scope, ids);
  const results = new Map<number, BatchItemResult>();
  const ok: AdRow[] = [];
  for (const id of ids) {
    const ad = visible.get(id);
    if (!ad) results.set(id, { adId: id, result: false, errors: [`adId: ad ${id} not found`] });
    else if (input.userId !== undefined && ad.userId !== input.userId) {
      results.set(id, { adId: id, result: false, errors: [`adId: ad ${id} does not belong to user ${input.userId}`] });
    } else {
      ok.push(ad);
      results.set(id, { adId: id, result: true, errors: [] });
    }
  }
  const scopes = [...new Set(ok.flatMap((ad) => adWriteScopes(ad.userId)))];
  return { ids, ok, scopes, results: () => ids.map((id) => results.get(id) as BatchItemResult) };
}

export async function patchAdsBatch(
  db: Db,
  scope: Scope,
  input: { userId?: number | undefined; adId: number[]; status: AdRow["status"] },
): Promise<BatchItemResult[]> {
  const batch = await resolveBatch(db, scope, input);
  if (batch.ok.length > 0) {
    await db.batch([
      db
        .update(ads)
        .set({ status: input.status, updatedAt: nowIso() })
        .where(
          inList(
            ads.id,
            batch.ok.map((a) => a.id),
          ),
        ),
      bumpRevisions(db, batch.scopes),
    ]);
  }
  return batch.results();
}

export async function deleteAdsBatch(
  db: Db,
  storage: R2Bucket,
  scope: Scope,
  input: { userId?: number | undefined; adId: number[] },
): Promise<BatchItemResult[]> {
  const batch = await resolveBatch(db, scope, input);
  if (batch.ok.length > 0) {
    const objects = await imageObjectsOf(
      db,
      batch.ok.map((a) => a.id),
    );
    await db.batch([
      db.delete(ads).where(
        inList(
          ads.id,
          batch.ok.map((a) => a.id),
        ),
      ),
      bumpRevisions(db, batch.scopes),
    ]);
    await deleteObjects(storage, objects);
  }
  return batch.results();
}

// ---- ad settings resource ----

export async function getAdSettings(db: Db, scope: Scope, adId: number) {
  await requireAd(db, scope, adId);
  const rows = await db.select().from(adSettings).where(eq(adSettings.adId, adId)).orderBy(adSettings.portal);
  return { adId, settings: rows.map(({ adId: _a, ...s }) => s) };
}

export async function replaceAdSettings(
  db: Db,
  scope: Scope,
  input: { adId: number; settings: NonNullable<CreateAdInput["settings"]> },
) {
  const ad = await requireAd(db, scope, input.adId);
  await db.batch([
    bumpRevisions(db, adWriteScopes(ad.userId)),
    db.update(ads).set({ updatedAt: nowIso() }).where(eq(ads.id, ad.id)),
    ...upsertSettings(db, ad.id, input.settings),
  ]);
  return getAdSettings(db, scope, ad.id);
}
