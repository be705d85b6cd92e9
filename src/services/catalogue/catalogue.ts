import { type Db, namedBatch } from "../../db/client";
import { attributeDefinitions, categories, categoryPrices, groups } from "../../db/schema";
import { keyedBy, PRODUCT_SAFETY_MARKETPLACES } from "../../lib/marketplaces";
import { type CataloguePortal, MARKETPLACES, type Marketplace } from "../../lib/vocabulary";

/**
 * The category catalogue is reference data that only migrations change, so an isolate reads it once
 * (one D1 round trip) and keeps it for CATALOGUE_TTL_MS.
 */
export const CATALOGUE_TTL_MS = 5 * 60 * 1000;
export const LOCALES = ["nl_NL", "en_GB"] as const;
export type Locale = (typeof LOCALES)[number];

export type Group = typeof groups.$inferSelect;
export type Category = typeof categories.$inferSelect;
export type AttributeDefinition = typeof attributeDefinitions.$inferSelect;
export type CategoryPrice = typeof categoryPrices.$inferSelect;

export interface Catalogue {
  groups: Map<number, Group>;
  categories: Map<number, Category>;
  /** categoryId → portal → definitions in sort order. */
  definitions: Map<number, Map<CataloguePortal, AttributeDefinition[]>>;
  /** categoryId → price rows. */
  prices: Map<number, CategoryPrice[]>;
  /** categoryId → the `prices` object of its ads, built once per catalogue (shared, never changed). */
  priceViews: Map<number, PricesView>;
}

let cached: { catalogue: Catalogue; until: number } | null = null;

export async function loadCatalogue(db: Db): Promise<Catalogue> {
  if (cached && cached.until > Date.now()) return cached.catalogue;
  const { groupRows, categoryRows, definitionRows, priceRows } = await namedBatch(db, {
    groupRows: db.select().from(groups),
    categoryRows: db.select().from(categories),
    definitionRows: db
      .select()
      .from(attributeDefinitions)
      .orderBy(attributeDefinitions.categoryId, attributeDefinitions.sort),
    priceRows: db.select().from(categoryPrices),
  });
  const definitions = new Map<number, Map<CataloguePortal, AttributeDefinition[]>>();
  for (const row of definitionRows) {
    const byPortal = definitions.get(row.categoryId) ?? new Map<CataloguePortal, AttributeDefinition[]>();
    definitions.set(row.categoryId, byPortal);
    const list = byPortal.get(row.portal) ?? [];
    list.push(row);
    byPortal.set(row.portal, list);
  }
  const prices = new Map<number, CategoryPrice[]>();
  for (const row of priceRows) prices.set(row.categoryId, [...(prices.get(row.categoryId) ?? []), row]);
  const catalogue: Catalogue = {
    groups: new Map(groupRows.map((g) => [g.id, g])),
    categories: new Map(categoryRows.map((c) => [c.id, c])),
    definitions,
    prices,
    priceViews: new Map([...prices].map(([categoryId, rows]) => [categoryId, priceView(rows)])),
  };
  cached = { catalogue, until: Date.now() + CATALOGUE_TTL_MS };
  return catalogue;
}

export const describe = (row: { descriptionNl: string; descriptionEn: string }, locale: Locale) =>
  locale === "en_GB" ? row.descriptionEn : row.descriptionNl;

export const labelOf = (definition: AttributeDefinition, locale: Locale) =>
  locale === "en_GB" ? definition.labelEn : definition.labelNl;

/** Definitions of the product-safety (GPSR) keys, present for non-automotive categories on the marketplaces that ask them. */
export const GPSR_KEYS = ["manufacturerTradename", "manufacturerAddress", "manufacturerEmail"] as const;

/**
 * Whether an ad must give `definition` on `portal`: the catalogue marks it mandatory, or it is a
 * product-safety key of a marketplace that asks them, and the seller is a business seller who attached
 * no manufacturer (`productSafety`). The create, the publish and discovery all ask this one question.
 */
export function isRequired(definition: AttributeDefinition, portal: CataloguePortal, productSafety: boolean): boolean {
  return (
    definition.mandatory ||
    (productSafety &&
      (PRODUCT_SAFETY_MARKETPLACES as readonly string[]).includes(portal) &&
      (GPSR_KEYS as readonly string[]).includes(definition.key))
  );
}

/** The spec's read-only `prices` object of an ad: per external portal, the cost of each action. */
function priceView(rows: CategoryPrice[]) {
  const view = (portal: Marketplace) =>
    rows
      .filter((r) => r.portal === portal)
      .map(({ action, priceInternal, priceExternal, priceTotal, priceNative }) => ({
        action,
        priceInternal,
        priceExternal,
        priceTotal,
        priceNative,
      }));
  return keyedBy(MARKETPLACES, view);
}
type PricesView = ReturnType<typeof priceView>;

const NO_PRICES: PricesView = priceView([]);

export const pricesOf = (catalogue: Catalogue, categoryId: number | null): PricesView =>
  (categoryId === null ? undefined : catalogue.priceViews.get(categoryId)) ?? NO_PRICES;
