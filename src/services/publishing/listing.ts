import { and, asc, eq, inArray } from "drizzle-orm";
import type { Db, NamedResults } from "../../db/client";
import { adAttributes, adSettings, ads, contacts, userAdSettings, userSettings, users } from "../../db/schema";
import { absoluteWebUrl } from "../../lib/fields";
import { sanitizeHtml, USER_AD_SETTINGS_TAGS } from "../../lib/html";
import type { Marketplace } from "../../lib/vocabulary";
import type { Listing } from "../../portals/gateway";
import { priceOf } from "../ads/access";
import { imagesQuery, toImageView } from "../images/images";

type AdRow = typeof ads.$inferSelect;

/** Links may be stored without their scheme (the spec allows it); a marketplace gets them whole. */
const withScheme = (link: string | null) => (link ? absoluteWebUrl(link) : link);

/**
 * The reads behind an ad's listing on a portal, to run in the batch that claims its job (so building the
 * listing costs no round trip of its own); `assembleListing` makes the listing from their results.
 */
export function listingQueries(db: Db, adId: number, userId: number, portal: Marketplace) {
  return {
    attributeRows: db
      .select()
      .from(adAttributes)
      .where(and(eq(adAttributes.adId, adId), eq(adAttributes.portal, portal)))
      .orderBy(asc(adAttributes.seq)),
    settingRows: db
      .select()
      .from(adSettings)
      .where(and(eq(adSettings.adId, adId), eq(adSettings.portal, portal))),
    userAdSettingRows: db
      .select()
      .from(userAdSettings)
      .where(and(eq(userAdSettings.userId, userId), eq(userAdSettings.portal, portal))),
    userSettingRows: db.select().from(userSettings).where(eq(userSettings.userId, userId)),
    contactRows: db
      .select()
      .from(contacts)
      .where(inArray(contacts.id, db.select({ id: ads.contactId }).from(ads).where(eq(ads.id, adId)))),
    userRows: db.select().from(users).where(eq(users.id, userId)),
    imageRows: imagesQuery(db, adId),
  };
}

/** What `listingQueries` read, by name (`namedBatches`). */
export type ListingRows = NamedResults<ReturnType<typeof listingQueries>>;

/**
 * The listing a marketplace gets for an ad: everything the spec stores for that portal. The description
 * is the user's header and footer for the portal around the ad's own, sanitised as one text; contact
 * details go only where the ad's `showcontact` for the portal allows.
 */
export async function assembleListing(
  rows: ListingRows,
  input: { ad: AdRow; externalRef: string; withImages: boolean; mediaBase: string },
): Promise<Listing> {
  const { ad } = input;
  const { attributeRows, settingRows, userAdSettingRows, userSettingRows, contactRows, userRows, imageRows } = rows;
  const [setting] = settingRows;
  const [userAdSetting] = userAdSettingRows;
  const [userSetting] = userSettingRows;
  const [contact] = contactRows;
  const [user] = userRows;
  // A new ad took the user's showcontact default as its setting; without a setting the spec's default holds.
  const showContact = setting?.showcontact ?? true;
  const sellerName = user
    ? user.companyName || [user.firstName, user.lastName].filter(Boolean).join(" ") || user.email
    : "";
  const description = await sanitizeHtml(
    [userAdSetting?.header, ad.description, userAdSetting?.footer].filter(Boolean).join("<br>"),
    USER_AD_SETTINGS_TAGS,
  );
  return {
    externalRef: input.externalRef,
    categoryId: ad.categoryId ?? 0,
    title: ad.title,
    description,
    price: priceOf(ad),
    attributes: attributeRows.map((row) => ({ key: row.key, value: row.valueNumber ?? row.value })),
    contact: !showContact
      ? null
      : contact
        ? {
            name: contact.name,
            address: [contact.address, contact.houseNumber].filter(Boolean).join(" "),
            postalCode: contact.postalCode,
            city: contact.city,
            phone: contact.phone,
            email: user?.email ?? null,
            website: withScheme(contact.website),
          }
        : {
            name: sellerName,
            address: user?.address ? [user.address, user.houseNumber].filter(Boolean).join(" ") : null,
            postalCode: user?.postalCode ?? null,
            city: user?.city ?? null,
            phone: user?.phone ?? user?.cellular ?? null,
            email: user?.email ?? null,
            website: withScheme(user?.website ?? null),
          },
    allowContactByEmail: userAdSetting?.allowContactByEmail ?? true,
    allowbids: userSetting?.allowbids ?? true,
    imagetext: ad.imagetext,
    url: withScheme(ad.url),
    video: withScheme(setting?.video ?? null),
    images: input.withImages ? imageRows.map((row, i) => toImageView(row, i + 1, input.mediaBase).image.url) : [],
  };
}
