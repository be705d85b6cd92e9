import { and, asc, count, eq, like, type SQL, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, nextId, withIds } from "../../db/ids";
import { inList } from "../../db/inList";
import { rowChunks } from "../../db/rowChunks";
import { adPublications, ads, adUpdateRequests, categories, manufacturers, users } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { describe, loadCatalogue } from "../catalogue/catalogue";
import { type Caller, requireUser, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions } from "../shared/revisions";
import { adWriteRevisions } from "./access";
import { builtInAssistant } from "./manufacturerAssistant";

type ManufacturerRow = typeof manufacturers.$inferSelect;

export interface ManufacturerFields {
  userId: number;
  groupId?: number | null | undefined;
  categoryId?: number | null | undefined;
  brands?: string[] | undefined;
  manufacturerTradename: string;
  manufacturerAddress: string;
  manufacturerEmail: string;
  description?: string | undefined;
}

async function view(db: Db, row: ManufacturerRow) {
  const catalogue = await loadCatalogue(db);
  const category = row.categoryId === null ? undefined : catalogue.categories.get(row.categoryId);
  return {
    manufacturerId: row.id,
    userId: row.userId,
    groupId: row.groupId ?? category?.groupId ?? null,
    categoryId: row.categoryId,
    categoryDescription: category ? describe(category, "nl_NL") : "",
    brands: row.brands,
    manufacturerTradename: row.tradename,
    manufacturerAddress: row.address,
    manufacturerEmail: row.email,
    description: row.description,
  };
}
export type ManufacturerView = Awaited<ReturnType<typeof view>> & { suggestion?: boolean };

async function checkCatalogueRefs(db: Db, input: { groupId?: number | null; categoryId?: number | null }) {
  const catalogue = await loadCatalogue(db);
  const problems: ErrorDetail[] = [];
  const category = input.categoryId ? catalogue.categories.get(input.categoryId) : undefined;
  if (input.categoryId && !category)
    problems.push(detail("reference_not_found", `categoryId: category ${input.categoryId} not found`));
  if (input.groupId && !catalogue.groups.has(input.groupId))
    problems.push(detail("reference_not_found", `groupId: group ${input.groupId} not found`));
  if (category && input.groupId && category.groupId !== input.groupId) {
    problems.push(
      detail("validation_failed", `categoryId: category ${input.categoryId} is not in group ${input.groupId}`),
    );
  }
  if (problems.length > 0) throw new DomainError(problems);
}

async function requireManufacturer(db: Db, caller: Caller, manufacturerId: number): Promise<ManufacturerRow> {
  const row = await db
    .select({ m: manufacturers })
    .from(manufacturers)
    .innerJoin(users, eq(users.id, manufacturers.userId))
    .where(and(eq(manufacturers.id, manufacturerId), visibleUsers(caller)))
    .get();
  if (!row) throw DomainError.of("manufacturer_not_found", `manufacturerId: manufacturer ${manufacturerId} not found`);
  return row.m;
}

export interface ManufacturersQuery {
  manufacturerId?: number | undefined;
  userId?: number | undefined;
  groupId?: number | undefined;
  categoryId?: number | undefined;
  brand?: string | undefined;
  categoryDescription?: string | undefined;
  manufacturerTradename?: string | undefined;
  aiassist?: boolean | undefined;
  page: number;
  itemsPerPage: number;
}

export async function searchManufacturers(
  ctx: ServiceContext,
  query: ManufacturersQuery,
): Promise<Page<ManufacturerView>> {
  const { db, caller } = ctx;
  const where: SQL[] = [visibleUsers(caller)];
  if (query.manufacturerId !== undefined) where.push(eq(manufacturers.id, query.manufacturerId));
  if (query.userId !== undefined) where.push(eq(manufacturers.userId, query.userId));
  if (query.groupId !== undefined) {
    where.push(sql`coalesce(${manufacturers.groupId}, ${categories.groupId}) = ${query.groupId}`);
  }
  if (query.categoryId !== undefined) where.push(eq(manufacturers.categoryId, query.categoryId));
  else if (query.categoryDescription) {
    where.push(
      sql`(${like(categories.descriptionNl, `%${query.categoryDescription}%`)} OR ${like(categories.descriptionEn, `%${query.categoryDescription}%`)})`,
    );
  }
  if (query.brand) {
    where.push(
      sql`EXISTS (SELECT 1 FROM json_each(${manufacturers.brands}) WHERE lower(value) = lower(${query.brand}))`,
    );
  }
  if (query.manufacturerTradename) where.push(like(manufacturers.tradename, `%${query.manufacturerTradename}%`));
  const filter = and(...where);
  const {
    total: [total],
    rows,
  } = await namedBatch(db, {
    total: db
      .select({ n: count() })
      .from(manufacturers)
      .innerJoin(users, eq(users.id, manufacturers.userId))
      .leftJoin(categories, eq(categories.id, manufacturers.categoryId))
      .where(filter),
    rows: db
      .select({ m: manufacturers })
      .from(manufacturers)
      .innerJoin(users, eq(users.id, manufacturers.userId))
      .leftJoin(categories, eq(categories.id, manufacturers.categoryId))
      .where(filter)
      .orderBy(asc(manufacturers.id))
      .limit(query.itemsPerPage)
      .offset((query.page - 1) * query.itemsPerPage),
  });
  const items: ManufacturerView[] = await Promise.all(rows.map((r) => view(db, r.m)));
  if (items.length === 0 && query.aiassist && (query.brand || query.manufacturerTradename)) {
    const suggestions = await builtInAssistant.suggest({ brand: query.brand, tradename: query.manufacturerTradename });
    const suggested = suggestions.map((s) => ({
      manufacturerId: null as unknown as number,
      userId: query.userId ?? null,
      groupId: query.groupId ?? null,
      categoryId: query.categoryId ?? null,
      categoryDescription: "",
      brands: [s.brand],
      manufacturerTradename: s.manufacturerTradename,
      manufacturerAddress: s.manufacturerAddress,
      manufacturerEmail: s.manufacturerEmail,
      description: "",
      suggestion: true,
    })) as ManufacturerView[];
    return { items: suggested, totalItems: suggested.length, page: 1, itemsPerPage: query.itemsPerPage };
  }
  return { items, totalItems: total?.n ?? 0, page: query.page, itemsPerPage: query.itemsPerPage };
}

const columns = (input: Partial<ManufacturerFields>) => {
  const out: Partial<typeof manufacturers.$inferInsert> = {};
  if (input.groupId !== undefined) out.groupId = input.groupId;
  if (input.categoryId !== undefined) out.categoryId = input.categoryId;
  if (input.brands !== undefined) out.brands = [...new Set(input.brands)];
  if (input.manufacturerTradename !== undefined) out.tradename = input.manufacturerTradename;
  if (input.manufacturerAddress !== undefined) out.address = input.manufacturerAddress;
  if (input.manufacturerEmail !== undefined) out.email = input.manufacturerEmail;
  if (input.description !== undefined) out.description = input.description;
  return out;
};

export async function createManufacturer(ctx: ServiceContext, input: ManufacturerFields) {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await checkCatalogueRefs(db, input);
  const row = await db
    .insert(manufacturers)
    .values({
      id: nextId(manufacturers, groupOfUser(input.userId)),
      userId: input.userId,
      tradename: input.manufacturerTradename,
      address: input.manufacturerAddress,
      email: input.manufacturerEmail,
      ...columns(input),
    })
    .returning()
    .get();
  return view(db, row);
}

export async function updateManufacturer(
  ctx: ServiceContext,
  input: Partial<ManufacturerFields> & { manufacturerId: number },
) {
  const { db, caller } = ctx;
  const current = await requireManufacturer(db, caller, input.manufacturerId);
  if (input.userId !== undefined && input.userId !== current.userId) await requireUser(db, caller, input.userId);
  await checkCatalogueRefs(db, {
    groupId: input.groupId === undefined ? current.groupId : input.groupId,
    categoryId: input.categoryId === undefined ? current.categoryId : input.categoryId,
  });
  // Both owners' revisions move when the record changes hands.
  const owners = [...new Set([current.userId, input.userId ?? current.userId])];
  const [[row]] = await db.batch([
    db
      .update(manufacturers)
      .set({ ...columns(input), ...(input.userId !== undefined ? { userId: input.userId } : {}) })
      .where(eq(manufacturers.id, current.id))
      .returning(),
    bumpRevisions(db, [...new Set(owners.flatMap(adWriteRevisions))], ctx.precondition),
  ]);
  return view(db, row ?? current);
}

/** Removes the record; ads that used it keep no manufacturer. */
export async function deleteManufacturer(ctx: ServiceContext, manufacturerId: number): Promise<void> {
  const { db, caller } = ctx;
  const current = await requireManufacturer(db, caller, manufacturerId);
  await db.batch([
    db.update(ads).set({ manufacturerId: null }).where(eq(ads.manufacturerId, current.id)),
    db.delete(manufacturers).where(eq(manufacturers.id, current.id)),
    bumpRevisions(db, adWriteRevisions(current.userId), ctx.precondition),
  ]);
}

/**
 * Attaches a manufacturer to the given ads of the user, or to all the user's ads in its category (its
 * group when it has no category, every ad when it has neither). With `publish`, an update is requested
 * for every portal each ad is active on; publishing turns those requests into queued updates.
 */
export async function attachManufacturer(
  ctx: ServiceContext,
  input: { manufacturerId: number; userId: number; adId?: number[] | undefined; publish?: boolean | undefined },
): Promise<{ adIds: number[]; updatesRequested: number }> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const manufacturer = await requireManufacturer(db, caller, input.manufacturerId);
  if (manufacturer.userId !== input.userId) {
    throw DomainError.of(
      "reference_not_found",
      `manufacturerId: manufacturer ${manufacturer.id} does not belong to user ${input.userId}`,
    );
  }
  let targets: number[];
  if (input.adId?.length) {
    const owned = await db
      .select({ id: ads.id })
      .from(ads)
      .where(and(eq(ads.userId, input.userId), inList(ads.id, input.adId)));
    const ownedIds = new Set(owned.map((r) => r.id));
    const missing = input.adId.filter((id) => !ownedIds.has(id));
    if (missing.length > 0)
      throw DomainError.of(
        "reference_not_found",
        ...missing.map((id) => `adId: ad ${id} not found for user ${input.userId}`),
      );
    targets = [...ownedIds];
  } else {
    const ownerFilter =
      manufacturer.categoryId !== null
        ? eq(ads.categoryId, manufacturer.categoryId)
        : manufacturer.groupId !== null
          ? sql`${ads.categoryId} IN (SELECT id FROM categories WHERE group_id = ${manufacturer.groupId})`
          : undefined;
    const rows = await db
      .select({ id: ads.id })
      .from(ads)
      .where(and(eq(ads.userId, input.userId), ownerFilter));
    targets = rows.map((r) => r.id);
  }
  if (targets.length === 0) return { adIds: [], updatesRequested: 0 };
  const published = input.publish
    ? await db
        .select({ adId: adPublications.adId, portal: adPublications.portal })
        .from(adPublications)
        .where(and(inList(adPublications.adId, targets), eq(adPublications.active, true)))
    : [];
  await db.batch([
    db.update(ads).set({ manufacturerId: manufacturer.id }).where(inList(ads.id, targets)),
    ...(published.length
      ? rowChunks(
          adUpdateRequests,
          published.map((p) => ({ ...p, reason: "manufacturer" })),
        ).map((rows) => db.insert(adUpdateRequests).values(withIds(adUpdateRequests, rows, groupOfUser(input.userId))))
      : []),
    bumpRevisions(db, adWriteRevisions(input.userId), ctx.precondition),
  ]);
  return { adIds: targets, updatesRequested: published.length };
}
