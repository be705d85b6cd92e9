import { and, eq, gte, or, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, newestId, nextId } from "../../db/ids";
import { rowsAsJson } from "../../db/nestedRows";
import { rowChunks } from "../../db/rowChunks";
import { adAttributes, adDetails, adSettings, ads, contacts, folders, userSettings } from "../../db/schema";
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { AD_DESCRIPTION_TAGS, sanitizeHtml } from "../../lib/html";
import { deleteObjects } from "../../lib/media";
import { nowIso } from "../../lib/time";
import { MARKETPLACES, type Marketplace } from "../../lib/vocabulary";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { isPartner, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { requireUnchanged } from "../shared/fixedFields";
import { bumpRevisions } from "../shared/revisions";
import { type AdRow, adWriteRevisions, imageObjectsOf, requireAd } from "./access";
import { type AttributeRowInput, type AttributeSet, checkAttributes } from "./attributes";
import type { CreateAdInput, UpdateAdInput } from "./schemas";

/** contactId and folderId must belong to the ad's user. */
async function checkOwnership(db: Db, userId: number, input: { contactId?: number | null; folderId?: number | null }) {
  const problems: ErrorDetail[] = [];
  const { contactRows, folderRows } = await namedBatch(db, {
    contactRows: db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.userId, userId), eq(contacts.id, input.contactId ?? 0))),
    folderRows: db
      .select({ id: folders.id })
      .from(folders)
      .where(and(eq(folders.userId, userId), eq(folders.id, input.folderId ?? 0))),
  });
  if (input.contactId && contactRows.length === 0)
    problems.push(detail("reference_not_found", `contactId: contact ${input.contactId} not found for user ${userId}`));
  if (input.folderId && folderRows.length === 0)
    problems.push(detail("reference_not_found", `folderId: folder ${input.folderId} not found for user ${userId}`));
  return problems;
}

function checkCategory(
  catalogue: Catalogue,
  categoryId: number,
  licensePlate: string | null | undefined,
): ErrorDetail[] {
  const category = catalogue.categories.get(categoryId);
  if (!category) return [detail("reference_not_found", `categoryId: category ${categoryId} not found`)];
  if (licensePlate && !catalogue.groups.get(category.groupId)?.automotive) {
    return [detail("validation_failed", "misc.licensePlate: only allowed in automotive categories")];
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

const DESCRIPTION_MIN = 5;

/** The spec's 5-character minimum holds for what is stored: the text left after sanitising. */
function descriptionProblems(sanitized: string): ErrorDetail[] {
  const text = sanitized.replace(/<[^>]*>/g, "").trim();
  return text.length < DESCRIPTION_MIN
    ? [detail("validation_failed", `description: must be ${DESCRIPTION_MIN}-65536 characters after sanitising`)]
    : [];
}

/**
 * The user's attribute defaults (condition, delivery) for a new ad, on each portal whose definitions for
 * the category have the key, where the ad does not give it. A set the ad leaves out is added only when it
 * is complete with the defaults alone (it would otherwise refuse an ad that asked nothing of that portal).
 */
function withAttributeDefaults(
  catalogue: Catalogue,
  sets: AttributeSet[],
  defaults: { key: string; value: string }[],
  context: Parameters<typeof checkAttributes>[2],
): AttributeSet[] {
  if (defaults.length === 0) return sets;
  const definitions = catalogue.definitions.get(context.categoryId);
  const result = [...sets];
  for (const portal of MARKETPLACES) {
    const keys = new Set((definitions?.get(portal) ?? []).filter((d) => d.writable).map((d) => d.key));
    const given = sets.find((set) => set.portal === portal);
    const missing = defaults.filter(({ key }) => keys.has(key) && !given?.values.some((value) => value.key === key));
    if (missing.length === 0) continue;
    if (given) {
      result[result.indexOf(given)] = { ...given, values: [...given.values, ...missing] };
      continue;
    }
    const added: AttributeSet = { portal, locale: "nl_NL", values: missing };
    if (checkAttributes(catalogue, [added], context).problems.length === 0) result.push(added);
  }
  return result;
}

/** The user's `showcontact` is the default of a new ad's setting on each portal the ad does not set. */
function withShowcontactDefault(settings: NonNullable<CreateAdInput["settings"]>, showcontact: boolean) {
  if (showcontact) return settings;
  const unset = MARKETPLACES.filter((portal) => !settings.some((s) => s.portal === portal));
  return [...settings, ...unset.map((portal) => ({ portal, showcontact }))];
}

/** A user's defaults for a new ad (its settings' type, showcontact and attribute defaults). */
export type NewAdDefaults = Pick<typeof userSettings.$inferSelect, "type" | "showcontact" | "attributes"> | undefined;

/** The user's defaults for a new ad, read once for any number of ads. */
export const newAdDefaultsQuery = (db: Db, userId: number) =>
  db
    .select({ type: userSettings.type, showcontact: userSettings.showcontact, attributes: userSettings.attributes })
    .from(userSettings)
    .where(eq(userSettings.userId, userId));

/**
 * The checks of a new ad that need only the catalogue, its user and the user's defaults (a stock sync's
 * dry run makes them for every item without writing): its category, its attributes with the user's
 * defaults, its description after sanitising. Answers the problems, and what the ad would store.
 */
export async function newAdContent(
  catalogue: Catalogue,
  owner: { user: { companyName: string | null }; defaults: NewAdDefaults },
  input: CreateAdInput,
) {
  const { user, defaults } = owner;
  const problems = checkCategory(catalogue, input.categoryId, input.misc?.licensePlate);
  const checkContext = {
    categoryId: input.categoryId,
    mode: "create",
    gpsrRequired: Boolean(user.companyName),
  } as const;
  const attributes = checkAttributes(
    catalogue,
    withAttributeDefaults(catalogue, input.attributes, defaults?.attributes ?? [], checkContext),
    checkContext,
  );
  const settings = withShowcontactDefault(input.settings ?? [], defaults?.showcontact ?? true);
  problems.push(...attributes.problems.map((problem) => detail("validation_failed", problem)));
  const description = await sanitizeHtml(input.description, AD_DESCRIPTION_TAGS);
  problems.push(...descriptionProblems(description));
  return { problems, attributeRows: attributes.rows, settings, description };
}

/**
 * POST /ads/: the new ad's id. A stock sync passes the item's `syncHash`, stored with the ad in its
 * insert, so that the next sync finds the item unchanged.
 */
export async function createAd(ctx: ServiceContext, input: CreateAdInput & { syncHash?: string }): Promise<number> {
  const { db, caller } = ctx;
  const user = await requireUser(db, caller, input.userId);
  const problems: ErrorDetail[] = [];
  if (isPartner(caller) && input.externalAdId === undefined)
    problems.push(detail("validation_failed", "externalAdId: is required for partner clients"));
  const [catalogue, ownership, defaults] = await Promise.all([
    loadCatalogue(db),
    checkOwnership(db, input.userId, input),
    newAdDefaultsQuery(db, input.userId).get(),
  ]);
  const content = await newAdContent(catalogue, { user, defaults }, input);
  const { settings, description } = content;
  problems.push(...ownership, ...content.problems);
  if (problems.length > 0) throw new DomainError(problems);

  // One batch, one transaction: the ad and everything below it are stored together or not at all.
  // The rows below the ad take its id as the newest of its group's block inside that transaction.
  const group = groupOfUser(input.userId);
  const newAdId = newestId(ads, group);
  const { created } = await namedBatch(db, {
    created: db
      .insert(ads)
      .values({
        id: nextId(ads, group),
        userId: input.userId,
        contactId: input.contactId ?? null,
        folderId: input.folderId ?? null,
        status: input.status ?? "active",
        externalAdId: input.externalAdId ?? null,
        type: input.type ?? defaults?.type ?? "supply",
        title: input.title,
        imagetext: input.imagetext ?? null,
        description,
        categoryId: input.categoryId,
        url: input.url ?? null,
        ...priceColumns(input.price),
        licensePlate: input.misc?.licensePlate ?? null,
        provider: input.provider ?? null,
        createdAt: creationTime(group),
        ...syncedAs(input.syncHash),
      })
      .returning({ id: ads.id }),
    attributes: insertAttributes(
      db,
      { id: newAdId, userId: input.userId, categoryId: input.categoryId },
      content.attributeRows,
    ),
    settings: settings.length ? [db.insert(adSettings).values(settingRows(newAdId, settings))] : [],
    details: detailsCopy(db, newAdId),
    revisions: bumpRevisions(db, adWriteRevisions(input.userId), ctx.precondition),
  });
  const [ad] = created;
  if (!ad) throw new Error("the ad's insert returned no row");
  return ad.id;
}

/**
 * The sync columns of an ad a stock sync writes: its item's hash, and the `updatedAt` the write leaves
 * (the same instant), so that a later write by any other call shows as a changed `updatedAt`.
 */
function syncedAs(syncHash: string | undefined) {
  if (syncHash === undefined) return {};
  const now = nowIso();
  return { syncHash, syncedAt: now, updatedAt: now };
}

/**
 * An ad's creation time: now, or its client group's newest ad's if the clock reads earlier. Creation order
 * is then id order within a group, which holds every list a client sees (searches page by id for
 * `created`), and the dates it sees in that order never run backwards.
 */
const creationTime = (group: SQL) =>
  sql<string>`max(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), coalesce((SELECT created_at FROM ads WHERE id = ${newestId(ads, group)}), ''))`;

/**
 * Rewrites the ad's details copy (`ad_details`) from its attribute and setting rows, once per command and
 * after the command's writes to them in the same batch: one row written, where triggers rewrote it once
 * per attribute row written.
 */
function detailsCopy(db: Db, adId: SQLValue): BatchItem<"sqlite"> {
  const attributeRows = rowsAsJson(adAttributes, eq(adAttributes.adId, adId), [adAttributes.portal, adAttributes.seq]);
  const settingRows = rowsAsJson(adSettings, eq(adSettings.adId, adId), [adSettings.portal]);
  return db
    .insert(adDetails)
    .values({ adId: typeof adId === "number" ? adId : sql`${adId}`, attributeRows, settingRows })
    .onConflictDoUpdate({
      target: adDetails.adId,
      set: { attributeRows: sql`excluded.attribute_rows`, settingRows: sql`excluded.setting_rows` },
      setWhere: changedFrom(adDetails.attributeRows, adDetails.settingRows),
    });
}

/**
 * An upsert's condition to update: some of `columns` differs from the row offered (`excluded`). A row sent
 * again unchanged (a dealer's sync re-sends its whole stock) is then left alone, and D1 counts no row
 * written for it, where an update to the same values still rewrites the row and its index entries.
 */
const changedFrom = (...columns: SQLiteColumn[]) =>
  sql.join(
    columns.map((column) => sql`${column} IS NOT excluded.${sql.identifier(column.name)}`),
    sql` OR `,
  );

/** The ad's attribute rows, in statements that stay under D1's limit of bound parameters. */
function insertAttributes(
  db: Db,
  ad: { id: SQLValue; userId: number; categoryId: number | null },
  rows: AttributeRowInput[],
) {
  const owner = { adId: ad.id, userId: ad.userId, categoryId: ad.categoryId };
  return rowChunks(
    adAttributes,
    rows.map((row) => ({ ...row, ...owner })),
  ).map((chunk) => db.insert(adAttributes).values(chunk));
}

/**
 * PUT's attribute sets: each portal sent gets exactly the rows sent. A row is keyed by its position
 * (`seq`), so the rows past the new count go, and each row sent is written only where it differs from
 * the row at its position: an attribute sent again unchanged writes nothing, a changed value updates its
 * row in place.
 */
function replaceAttributes(
  db: Db,
  ad: { id: number; userId: number; categoryId: number | null },
  portals: Marketplace[],
  rows: AttributeRowInput[],
): BatchItem<"sqlite">[] {
  if (portals.length === 0) return [];
  const count = (portal: Marketplace) => rows.filter((row) => row.portal === portal).length;
  const pastTheRowsSent = or(
    ...portals.map((portal) => and(sql`${adAttributes.portal} = ${portal}`, gte(adAttributes.seq, count(portal)))),
  );
  return [
    db.delete(adAttributes).where(and(eq(adAttributes.adId, ad.id), pastTheRowsSent)),
    ...insertAttributes(db, ad, rows).map((insert) =>
      insert.onConflictDoUpdate({
        target: [adAttributes.adId, adAttributes.portal, adAttributes.seq],
        set: {
          locale: sql`excluded.locale`,
          key: sql`excluded.key`,
          value: sql`excluded.value`,
          valueNumber: sql`excluded.value_number`,
        },
        setWhere: changedFrom(adAttributes.locale, adAttributes.key, adAttributes.value, adAttributes.valueNumber),
      }),
    ),
  ];
}

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

function upsertSettings(db: Db, adId: number, settings: NonNullable<CreateAdInput["settings"]>): BatchItem<"sqlite">[] {
  return settingRows(adId, settings).map((row) =>
    db
      .insert(adSettings)
      .values(row)
      .onConflictDoUpdate({
        target: [adSettings.adId, adSettings.portal],
        set: { showcontact: row.showcontact, autoreplace: row.autoreplace, video: row.video },
        setWhere: changedFrom(adSettings.showcontact, adSettings.autoreplace, adSettings.video),
      }),
  );
}

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
