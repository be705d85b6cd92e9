import { and, eq, type SQL, sql } from "drizzle-orm";
import { jsonRow, nestedRows, rowsDecoder } from "../../db/nestedRows";
import {
  adAttributes,
  adDetails,
  adFeatures,
  adImages,
  adPublications,
  adSettings,
  ads,
  contacts,
  users,
} from "../../db/schema";
import { formatDateTime } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import { contactFields } from "../accounts/contacts";
import { type AdRow, adNotFound, priceOf } from "../ads/access";
import { type Catalogue, describe, labelOf, loadCatalogue, pricesOf } from "../catalogue/catalogue";
import { type ImageView, toImageView } from "../images/images";
import { portalStatuses } from "../publishing/status";
import { visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";

type AttributeRow = typeof adAttributes.$inferSelect;
type PublicationRow = typeof adPublications.$inferSelect;
type FeatureRow = typeof adFeatures.$inferSelect;
type ImageRow = typeof adImages.$inferSelect;

function attributesView(catalogue: Catalogue, ad: AdRow, rows: AttributeRow[]) {
  const byPortal = new Map<Marketplace, AttributeRow[]>();
  for (const row of rows) byPortal.set(row.portal, [...(byPortal.get(row.portal) ?? []), row]);
  const definitions = ad.categoryId === null ? undefined : catalogue.definitions.get(ad.categoryId);
  return [...byPortal.entries()].map(([portal, list]) => ({
    portal,
    locale: list[0]?.locale ?? ("nl_NL" as const),
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

/** `images` of an ad: the list in order, or false when it has none; `simple` shows the primary image only. */
const imagesOf = (rows: ImageRow[], simple: boolean, mediaBase: string) => {
  if (rows.length === 0) return false as const;
  return (simple ? rows.slice(0, 1) : rows).map((row, i) => toImageView(row, i + 1, mediaBase));
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
  settings: { portal: Marketplace; showcontact: boolean; autoreplace: boolean; video: string | null }[];
  contact: ReturnType<typeof contactFields> | false;
  provider: Record<string, string> | null;
};

const simpleViewColumns = {
  ad: jsonRow(ads),
  publications: nestedRows(adPublications, eq(adPublications.adId, ads.id)),
  features: nestedRows(adFeatures, eq(adFeatures.adId, ads.id)),
  images: nestedRows(adImages, eq(adImages.adId, ads.id), [adImages.sortKey, adImages.id]),
};
const decodeAttributes = rowsDecoder(adAttributes);
const decodeSettings = rowsDecoder(adSettings);

/**
 * An ad's attribute and setting rows, as the triggers of migration 0020 keep them in `ad_details`: one
 * row read for all of them, where reading the rows themselves cost one per row and one per table.
 */
const storedDetails =
  sql`(SELECT json_array(json(${adDetails.attributeRows}), json(${adDetails.settingRows})) FROM ${adDetails} WHERE ${adDetails.adId} = ${ads.id})`.mapWith(
    (text: string) => {
      const [attributes, settings] = JSON.parse(text) as [unknown[][], unknown[][]];
      return { attributes: decodeAttributes(attributes), settings: decodeSettings(settings) };
    },
  );

const fullViewColumns = {
  ...simpleViewColumns,
  details: storedDetails,
  contacts: nestedRows(contacts, eq(contacts.id, ads.contactId)), // the ad's contact, if any: at most one
};

/**
 * What to select from `ads` for its views: the ad and, as nested rows, everything its view shows
 * (`simple`: publications, features and images; a full view adds attributes, settings and the contact).
 * A page of views is then one statement that walks the page once.
 */
export const viewColumns = (simple: boolean) => (simple ? simpleViewColumns : fullViewColumns);

type Decoded<T> = { [K in keyof T]: T[K] extends SQL<infer V> ? V : never };
/** An ad with its details, as `viewColumns` reads it (a simple view's read has no full details). */
export type ViewRow = Decoded<typeof simpleViewColumns> & Partial<Decoded<typeof fullViewColumns>>;

/** The views of ad rows read with `viewColumns`, in the rows' order. */
export function assembleViews(
  catalogue: Catalogue,
  rows: ViewRow[],
  simple: boolean,
  mediaBase: string,
): (AdView | SimpleAdView)[] {
  return rows.map(({ ad, publications, features, images, details, contacts = [] }) => {
    const base = baseView(catalogue, ad, publications, features, imagesOf(images, simple, mediaBase));
    if (simple) return base;
    const [contact] = contacts;
    return {
      ...base,
      description: ad.description,
      attributes: attributesView(catalogue, ad, details?.attributes ?? []),
      settings: (details?.settings ?? []).map(({ adId: _a, ...s }) => s),
      contact: contact ? contactFields(contact) : false,
      provider: ad.provider ?? null,
    };
  });
}

/** The full view of one ad the caller may see, in one statement (plus the catalogue, cached per isolate). */
export async function getAd({ db, caller, mediaBase }: ServiceContext, adId: number): Promise<AdView> {
  const [catalogue, [row]] = await Promise.all([
    loadCatalogue(db),
    db
      .select(viewColumns(false))
      .from(ads)
      .innerJoin(users, eq(users.id, ads.userId))
      .where(and(eq(ads.id, adId), visibleUsers(caller))),
  ]);
  if (!row) throw adNotFound(adId);
  return assembleViews(catalogue, [row], false, mediaBase)[0] as AdView;
}
