import { and, eq, sql } from "drizzle-orm";
import { adTallies, categories, portalConnections } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { keyedBy } from "../../lib/marketplaces";
import {
  type AdStatus,
  type CataloguePortal,
  MARKETPLACES,
  PUBLISH_TARGETS,
  type PublishTarget,
} from "../../lib/vocabulary";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { type Catalogue, describe, isRequired, LOCALES, type Locale, labelOf, loadCatalogue } from "./catalogue";
import { placingPrice } from "./features";

const paged = <T>(items: T[], page: number, itemsPerPage: number): Page<T> => ({
  items: items.slice((page - 1) * itemsPerPage, page * itemsPerPage),
  totalItems: items.length,
  page,
  itemsPerPage,
});

/**
 * The publish targets a category is offered on: a marketplace where the category carries that portal's
 * attribute definitions and prices; the website (whose definitions the catalogue calls `portal_own`) always.
 */
function offeredOn(catalogue: Catalogue, categoryId: number): PublishTarget[] {
  const marketplaces = MARKETPLACES.filter(
    (portal) =>
      catalogue.definitions.get(categoryId)?.has(portal) &&
      catalogue.prices.get(categoryId)?.some((price) => price.portal === portal),
  );
  return [...marketplaces, "website"];
}

/**
 * A category as `/categories/` and `/groups/` show it: its group, names, targets and mandatory keys, for
 * a business seller (`productSafety`) with the product-safety keys of the marketplaces that ask them.
 */
function categoryView(catalogue: Catalogue, categoryId: number, locales: readonly Locale[], productSafety = false) {
  const category = catalogue.categories.get(categoryId);
  if (!category) throw DomainError.of("category_not_found", `categoryId: category ${categoryId} not found`);
  return {
    categoryId,
    groupId: category.groupId,
    descriptions: locales.map((locale) => ({ locale, description: describe(category, locale) })),
    portals: offeredOn(catalogue, categoryId),
    // What a placement costs on each target, as a publish charges it (the website is free).
    placementPrices: offeredOn(catalogue, categoryId).map((portal) => ({
      portal,
      price: placingPrice(catalogue, categoryId, portal),
    })),
    mandatoryAttributes: [...(catalogue.definitions.get(categoryId)?.entries() ?? [])].map(([portal, definitions]) => ({
      portal,
      keys: definitions.filter((d) => isRequired(d, portal, productSafety)).map((d) => d.key),
    })),
  };
}

export interface CategoriesQuery {
  categoryId?: number | undefined;
  /** The seller whose ads the keys are for: a business seller (with a companyName) gives product-safety data. */
  userId?: number | undefined;
  groupId?: number | undefined;
  locale?: Locale[] | undefined;
  page: number;
  itemsPerPage: number;
}

/** The categories of a group, or all of them, in id order. */
const categoryIdsOf = (catalogue: Catalogue, groupId?: number) =>
  [...catalogue.categories.values()]
    .filter((category) => groupId === undefined || category.groupId === groupId)
    .map((category) => category.id)
    .sort((a, b) => a - b);

/** GET /categories/[<categoryId>]: categories with their group, names per locale, targets and mandatory keys. */
export async function listCategories(ctx: ServiceContext, query: CategoriesQuery) {
  const productSafety = query.userId !== undefined && (await isBusinessSeller(ctx, query.userId));
  const catalogue = await loadCatalogue(ctx.db);
  const locales = query.locale?.length ? query.locale : [...LOCALES];
  const ids = query.categoryId !== undefined ? [query.categoryId] : categoryIdsOf(catalogue, query.groupId);
  return paged(
    ids.map((categoryId) => categoryView(catalogue, categoryId, locales, productSafety)),
    query.page,
    query.itemsPerPage,
  );
}

/** Whether the user sells as a business (has a companyName), whom a marketplace may ask for product-safety data. */
const isBusinessSeller = async (ctx: ServiceContext, userId: number) =>
  Boolean((await requireUser(ctx.db, ctx.caller, userId)).companyName);

export interface GroupsQuery {
  groupId?: number[] | undefined;
  userId?: number | undefined;
  status?: AdStatus | undefined;
  availability?: boolean | undefined;
  locale?: Locale[] | undefined;
  total?: boolean | undefined;
  categories?: boolean | undefined;
  page: number;
  itemsPerPage: number;
}

/**
 * POST /groups/: groups with descriptions per locale; with userId only the groups of the user's ads (and
 * their categories' mandatory keys for that seller).
 */
export async function listGroups(ctx: ServiceContext, query: GroupsQuery) {
  const { db } = ctx;
  const catalogue = await loadCatalogue(db);
  const locales = query.locale?.length ? query.locale : [...LOCALES];
  let adCounts: Map<number, number> | undefined;
  let productSafety = false;
  if (query.userId !== undefined) {
    productSafety = await isBusinessSeller(ctx, query.userId);
    // Summed from the user's tallies: a few rows, however many ads the user has.
    const rows = await db
      .select({ groupId: categories.groupId, n: sql<number>`sum(${adTallies.n})` })
      .from(adTallies)
      .innerJoin(categories, eq(categories.id, adTallies.categoryId))
      .where(and(eq(adTallies.userId, query.userId), eq(adTallies.status, query.status ?? "active")))
      .groupBy(categories.groupId)
      .having(sql`sum(${adTallies.n}) > 0`);
    adCounts = new Map(rows.map((r) => [r.groupId, r.n]));
  }
  const groups = [...catalogue.groups.values()]
    .filter((g) => !query.groupId || query.groupId.includes(g.id))
    .filter((g) => !adCounts || adCounts.has(g.id))
    .sort((a, b) => a.id - b.id)
    .map((group) => ({
      groupId: group.id,
      descriptions: locales.map((locale) => ({ locale, description: describe(group, locale) })),
      ...(query.availability ? { availability: availability(catalogue, group.id) } : {}),
      ...(query.total ? { total: adCounts?.get(group.id) ?? 0 } : {}),
      ...(query.categories
        ? {
            categories: categoryIdsOf(catalogue, group.id).map((id) =>
              categoryView(catalogue, id, locales, productSafety),
            ),
          }
        : {}),
    }));
  return paged(groups, query.page, query.itemsPerPage);
}

/** A group is offered on a target when one of its categories is. */
function availability(catalogue: Catalogue, groupId: number) {
  const offered = new Set(categoryIdsOf(catalogue, groupId).flatMap((id) => offeredOn(catalogue, id)));
  return keyedBy(PUBLISH_TARGETS, (target) => offered.has(target));
}

export interface AttributesQuery {
  categoryId?: number[] | undefined;
  locale?: Locale[] | undefined;
  userId?: number | undefined;
  page: number;
  itemsPerPage: number;
}

/**
 * POST /attributes/: per category, the attribute definitions per portal and locale. With `userId` only the portals the user is connected to, and
 * the website's own definitions (`portal_own`): "no results for portals the user is not connected to".
 * `minimum`/`maximum` are ints as the spec types them: 0 where a definition has no bound.
 */
export async function listAttributes(ctx: ServiceContext, query: AttributesQuery) {
  const { db } = ctx;
  let shown: Set<CataloguePortal> | null = null;
  let productSafety = false;
  if (query.userId !== undefined) {
    productSafety = await isBusinessSeller(ctx, query.userId);
    const connected = await db
      .select({ portal: portalConnections.portal })
      .from(portalConnections)
      .where(and(eq(portalConnections.userId, query.userId), eq(portalConnections.status, true)));
    shown = new Set<CataloguePortal>(["portal_own", ...connected.map((row) => row.portal)]);
  }
  const catalogue = await loadCatalogue(db);
  const locales = query.locale?.length ? query.locale : (["nl_NL"] as Locale[]);
  const shownCategories = [...catalogue.categories.values()]
    .filter((category) => !query.categoryId || query.categoryId.includes(category.id))
    .sort((a, b) => a.id - b.id);
  const entries = shownCategories.map(({ id: categoryId, groupId, ...names }) => ({
    categoryId,
    groupId,
    // In the first locale asked for: what the category is called, without a second call.
    categoryDescription: describe(names, locales[0] ?? "nl_NL"),
    attributes: [...(catalogue.definitions.get(categoryId)?.entries() ?? [])]
      .filter(([portal]) => shown === null || shown.has(portal))
      .flatMap(([portal, definitions]) =>
        locales.map((locale) => ({
          portal: portal as CataloguePortal,
          locale,
          attributes: definitions.map((d) => ({
            key: d.key,
            label: labelOf(d, locale),
            values: d.values.length > 0 ? d.values : "",
            type: d.type,
            sort: d.sort,
            minimum: d.minimum ?? 0,
            maximum: d.maximum ?? 0,
            unit: d.unit,
            mandatory: isRequired(d, portal, productSafety),
            writable: d.writable,
            updatable: d.updatable,
            searchable: d.searchable,
          })),
        })),
      ),
  }));
  return paged(entries, query.page, query.itemsPerPage);
}
