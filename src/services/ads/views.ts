import type { AdRow } from "./access";

export type { AdRow };

import { asc, inArray } from "drizzle-orm";
import type { SQLiteSelect } from "drizzle-orm/sqlite-core";
import type { Db } from "../../db/client";
import { inIds } from "../../db/inList";
import { adAttributes, adFeatures, adPublications, adSettings, ads, contacts } from "../../db/schema";
import { formatDateTime } from "../../lib/time";
import { contactFields } from "../accounts/contacts";
import { type Catalogue, describe, labelOf, loadCatalogue, pricesOf } from "../catalogue/catalogue";
import { type ImageView, imagesByAd, imagesQuery, toImageView } from "../images/images";
import { portalStatuses } from "../publishing/portalStatus";

type AttributeRow = typeof adAttributes.$inferSelect;
type SettingRow = typeof adSettings.$inferSelect;
type PublicationRow = typeof adPublications.$inferSelect;
type FeatureRow = typeof adFeatures.$inferSelect;
type ContactRow = typeof contacts.$inferSelect;
type ImageRow = Parameters<typeof imagesByAd>[0][number];

/** The spec's price object of an ad (the views and the marketplace listing carry the same). */
export const priceOf = (ad: AdRow) => ({
  model: ad.priceModel,
  price: ad.price,
  minimumBid: ad.minimumBid,
  shippingCosts: ad.shippingCosts,
  retailPrice: ad.retail,
});

function attributesView(catalogue: Catalogue, ad: AdRow, rows: AttributeRow[]) {
  const byPortal = new Map<string, AttributeRow[]>();
  for (const row of rows) byPortal.set(row.portal, [...(byPortal.get(row.portal) ?? []), row]);
  const definitions = ad.categoryId === null ? undefined : catalogue.definitions.get(ad.categoryId);
  return [...byPortal.entries()].map(([portal, list]) => ({
    portal,
    locale: list[0]?.locale ?? "nl_NL",
    attributes: list
      .sort((a, b) => a.seq - b.seq)
      .map((row) => {
        const definition = definitions?.get(row.portal)?.find((d) => d.key === row.key);
        const numeric = definition?.type === "NUMBER" || definition?.type === "DOUBLE";
        return {
          key: row.key,
          value: numeric && row.valueNumber !== null ? row.valueNumber : row.value,
          label: definition ? labelOf(definition, "nl_NL") : row.key,
        };
      }),
  }));
}

type ImageEntry = { row: Parameters<typeof toImageView>[0]; counter: number };

/** `images` of an ad: the list, or false when it has none; `simple` shows the primary image only. */
const imagesOf = (entries: ImageEntry[] | undefined, simple: boolean, mediaBase: string) => {
  if (!entries?.length) return false as const;
  return (simple ? entries.slice(0, 1) : entries).map(({ row, counter }) => toImageView(row, counter, mediaBase));
};

function baseView(
  catalogue: Catalogue,
  ad: AdRow,
  publications: PublicationRow[],
  features: FeatureRow[],
  images: ImageView[] | false,
) {
  const category = ad.categoryId === null ? undefined : catalogue.categories.get(ad.categoryId);
  const group = category ? catalogue.groups.get(category.groupId) : undefined;
  return {
    adId: ad.id,
    created: formatDateTime(ad.createdAt),
    updated: formatDateTime(ad.updatedAt),
    userId: ad.userId,
    contactId: ad.contactId,
    folderId: ad.folderId,
    status: ad.status,
    externalAdId: ad.externalAdId,
    type: ad.type,
    title: ad.title,
    imagetext: ad.imagetext,
    groupId: group?.id ?? null,
    groupDescription: group ? describe(group, "nl_NL") : null,
    categoryId: ad.categoryId,
    categoryDescription: category ? describe(category, "nl_NL") : null,
    url: ad.url,
    price: priceOf(ad),
    prices: pricesOf(catalogue, ad.categoryId),
    images,
    portals: portalStatuses(publications, features),
    misc: { licensePlate: ad.licensePlate },
    manufacturerId: ad.manufacturerId,
  };
}

export type SimpleAdView = ReturnType<typeof baseView>;
export type AdView = SimpleAdView & {
  description: string;
  attributes: ReturnType<typeof attributesView>;
  settings: { portal: "portal_a" | "portal_b"; showcontact: boolean; autoreplace: boolean; video: string | null }[];
  contact: ReturnType<typeof contactFields> | false;
  provider: Record<string, string> | null;
};

/** Rows per ad, in the order read. */
export function groupByAd<T extends { adId: number }>(rows: T[]): Map<number, T[]> {
  const map = new Map<number, T[]>();
  for (const row of rows) {
    const list = map.get(row.adId);
    if (list) list.push(row);
    else map.set(row.adId, [row]);
  }
  return map;
}

/** The ads to describe: their ids, or a query that selects them (a page, read in the same batch). */
export type AdIds = number[] | SQLiteSelect;

/**
 * The reads behind the views of some ads, to run in one D1 batch (with the page query itself when the
 * ids are that query): `simple` reads publications, features and images; a full view adds attributes,
 * settings and contacts.
 */
export function viewQueries(db: Db, ids: AdIds, simple: boolean) {
  const common = [
    db.select().from(adPublications).where(inIds(adPublications.adId, ids)),
    db.select().from(adFeatures).where(inIds(adFeatures.adId, ids)),
    imagesQuery(db, ids),
  ] as const;
  if (simple) return common;
  return [
    ...common,
    db.select().from(adAttributes).where(inIds(adAttributes.adId, ids)).orderBy(asc(adAttributes.seq)),
    db.select().from(adSettings).where(inIds(adSettings.adId, ids)).orderBy(asc(adSettings.portal)),
    db
      .select()
      .from(contacts)
      .where(inArray(contacts.id, db.select({ id: ads.contactId }).from(ads).where(inIds(ads.id, ids)))),
  ] as const;
}

type ViewRows = [PublicationRow[], FeatureRow[], ImageRow[], AttributeRow[]?, SettingRow[]?, ContactRow[]?];

/** The views of `rows` from what `viewQueries` read, in the rows' order. */
export function assembleViews(
  catalogue: Catalogue,
  rows: AdRow[],
  results: unknown[],
  simple: boolean,
  mediaBase: string,
): (AdView | SimpleAdView)[] {
  const [publicationRows, featureRows, imageRows, attributeRows = [], settingRows = [], contactRows = []] =
    results as ViewRows;
  const publications = groupByAd(publicationRows);
  const features = groupByAd(featureRows);
  const images = imagesByAd(imageRows);
  const base = (ad: AdRow) =>
    baseView(
      catalogue,
      ad,
      publications.get(ad.id) ?? [],
      features.get(ad.id) ?? [],
      imagesOf(images.get(ad.id), simple, mediaBase),
    );
  if (simple) return rows.map(base);
  const attributes = groupByAd(attributeRows);
  const settings = groupByAd(settingRows);
  const contactsById = new Map(contactRows.map((c) => [c.id, c]));
  return rows.map((ad) => {
    const contact = ad.contactId === null ? undefined : contactsById.get(ad.contactId);
    return {
      ...base(ad),
      description: ad.description,
      attributes: attributesView(catalogue, ad, attributes.get(ad.id) ?? []),
      settings: (settings.get(ad.id) ?? []).map(({ adId: _a, ...s }) => s),
      contact: contact ? contactFields(contact) : false,
      provider: ad.provider ?? null,
    };
  });
}

/** Views of some ads in one D1 round trip (plus the catalogue, cached per isolate). */
export async function adViews(
  db: Db,
  rows: AdRow[],
  simple: boolean,
  mediaBase: string,
): Promise<(AdView | SimpleAdView)[]> {
  const catalogue = await loadCatalogue(db);
  if (rows.length === 0) return [];
  const [first, ...rest] = viewQueries(
    db,
    rows.map((r) => r.id),
    simple,
  );
  return assembleViews(catalogue, rows, await db.batch([first, ...rest]), simple, mediaBase);
}
