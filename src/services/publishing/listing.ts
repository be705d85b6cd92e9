import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { adAttributes, adSettings, type ads, contacts, userAdSettings, userSettings, users } from "../../db/schema";
import { sanitizeHtml, USER_AD_SETTINGS_TAGS } from "../../lib/html";
import type { Listing, MarketplacePortal } from "../../portals/gateway";
import { imagesByAd, imagesQuery, toImageView } from "../images/images";

type AdRow = typeof ads.$inferSelect;

/** Links may be stored without their scheme (the spec allows it); a marketplace gets them whole. */
const withScheme = (link: string | null) => (link && !/^[a-z][a-z0-9+.-]*:\/\//i.test(link) ? `https://${link}` : link);

/**
 * The listing a marketplace gets for an ad: everything the spec stores for that portal, read in one
 * D1 round trip. The description is the user's header and footer for the portal around the ad's own,
 * sanitised as one text; contact details go only where the ad's `showcontact` for the portal allows.
 */
export async function listingOf(
  db: Db,
  input: { ad: AdRow; portal: MarketplacePortal; externalRef: string; withImages: boolean; mediaBase: string },
): Promise<Listing> {
  const { ad, portal } = input;
  const [attributeRows, settingRows, userAdSettingRows, userSettingRows, contactRows, userRows, imageRows] =
    await db.batch([
      db
        .select()
        .from(adAttributes)
        .where(and(eq(adAttributes.adId, ad.id), eq(adAttributes.portal, portal)))
        .orderBy(asc(adAttributes.seq)),
      db
        .select()
        .from(adSettings)
        .where(and(eq(adSettings.adId, ad.id), eq(adSettings.portal, portal))),
      db
        .select()
        .from(userAdSettings)
        .where(and(eq(userAdSettings.userId, ad.userId), eq(userAdSettings.portal, portal))),
      db.select().from(userSettings).where(eq(userSettings.userId, ad.userId)),
      db
        .select()
        .from(contacts)
        .where(eq(contacts.id, ad.contactId ?? 0)),
      db.select().from(users).where(eq(users.id, ad.userId)),
      imagesQuery(db, [ad.id]),
    ]);
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
    price: {
      model: ad.priceModel,
      price: ad.price,
      minimumBid: ad.minimumBid,
      shippingCosts: ad.shippingCosts,
      retailPrice: ad.retail,
    },
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
    images: input.withImages
      ? (imagesByAd(imageRows).get(ad.id) ?? []).map(
          ({ row, counter }) => toImageView(row, counter, input.mediaBase).image.url,
        )
      : [],
  };
}
