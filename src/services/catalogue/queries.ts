import { and, count, eq } from "drizzle-orm";
import { ads, categories, portalConnections } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import type { AdStatus, CataloguePortal, Marketplace } from "../../lib/vocabulary";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { type Catalogue, describe, LOCALES, type Locale, labelOf, loadCatalogue } from "./catalogue";

const paged = <T>(items: T[], page: number, itemsPerPage: number): Page<T> => ({
  items: items.slice((page - 1) * itemsPerPage, page * itemsPerPage),
  totalItems: items.length,
  page,
  itemsPerPage,
});

export interface GroupsQuery {
  groupId?: number[] | undefined;
  userId?: number | undefined;
  status?: AdStatus | undefined;
  availability?: boolean | undefined;
  locale?: Locale[] | undefined;
  total?: boolean | undefined;
  page: number;
  itemsPerPage: number;
}

/** POST /groups/: groups with descriptions per locale; with userId only the groups of the user's ads. */
export async function listGroups(ctx: ServiceContext, query: GroupsQuery) {
  const { db, caller } = ctx;
  const catalogue = await loadCatalogue(db);
  const locales = query.locale?.length ? query.locale : [...LOCALES];
  let adCounts: Map<number, number> | undefined;
  if (query.userId !== undefined) {
    await requireUser(db, caller, query.userId);
    const rows = await db
      .select({ groupId: categories.groupId, n: count() })
      .from(ads)
      .innerJoin(categories, eq(categories.id, ads.categoryId))
      .where(and(eq(ads.userId, query.userId), eq(ads.status, query.status ?? "active")))
      .groupBy(categories.groupId);
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
    }));
  return paged(groups, query.page, query.itemsPerPage);
}

/** A group is offered on a marketplace when its categories carry that portal's definitions and prices. */
function availability(catalogue: Catalogue, groupId: number) {
  const categoryIds = [...catalogue.categories.values()].filter((c) => c.groupId === groupId).map((c) => c.id);
  const offered = (portal: Marketplace) =>
    categoryIds.some(
      (id) => catalogue.definitions.get(id)?.has(portal) && catalogue.prices.get(id)?.some((p) => p.portal === portal),
    );
  return { portal_a: offered("portal_a"), portal_b: offered("portal_b"), website: categoryIds.length > 0 };
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
  const { db, caller } = ctx;
  let shown: Set<CataloguePortal> | null = null;
  if (query.userId !== undefined) {
    await requireUser(db, caller, query.userId);
    const connected = await db
      .select({ portal: portalConnections.portal })
      .from(portalConnections)
      .where(and(eq(portalConnections.userId, query.userId), eq(portalConnections.status, true)));
    shown = new Set<CataloguePortal>(["portal_own", ...connected.map((row) => row.portal)]);
  }
  const catalogue = await loadCatalogue(db);
  const locales = query.locale?.length ? query.locale : (["nl_NL"] as Locale[]);
  const categoryIds = [...catalogue.categories.keys()]
    .filter((id) => !query.categoryId || query.categoryId.includes(id))
    .sort((a, b) => a - b);
  const entries = categoryIds.map((categoryId) => ({
    categoryId,
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
            mandatory: d.mandatory,
            writable: d.writable,
            updatable: d.updatable,
            searchable: d.searchable,
          })),
        })),
      ),
  }));
  return paged(entries, query.page, query.itemsPerPage);
}
