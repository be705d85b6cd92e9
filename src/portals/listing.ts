import { z } from "zod";

const cents = z.number().int().nullable();

/**
 * What the service sends a marketplace for one ad: the whole ad as that portal shows it, as the gateway
 * builds it. The simulator keeps the marketplace's own definition (`MarketplaceListing` in
 * simulator/src/listing.ts), which refuses a field it does not know, as a real marketplace would.
 */
export const ListingSchema = z.object({
  /** Our stable reference of the placement; a retried create answers the listing made first. */
  externalRef: z.string().min(1),
  categoryId: z.number().int(),
  title: z.string(),
  /** The user's header for the portal, the ad's description and the footer, sanitised as one text. */
  description: z.string(),
  price: z.object({
    model: z.string(),
    price: cents,
    minimumBid: cents,
    shippingCosts: cents,
    retailPrice: cents,
  }),
  /** The ad's attribute values for this portal, in the order given (a LIST key repeats). */
  attributes: z.array(z.object({ key: z.string(), value: z.union([z.string(), z.number()]) })),
  /** Shown on the listing only when the ad's `showcontact` for the portal allows it. */
  contact: z
    .object({
      name: z.string(),
      address: z.string().nullable(),
      postalCode: z.string().nullable(),
      city: z.string().nullable(),
      phone: z.string().nullable(),
      email: z.string().nullable(),
      website: z.string().nullable(),
    })
    .nullable(),
  allowContactByEmail: z.boolean(),
  allowbids: z.boolean(),
  imagetext: z.string().nullable(),
  url: z.string().nullable(),
  video: z.string().nullable(),
  /** Image URLs in counter order. */
  images: z.array(z.string()),
});

export type Listing = z.infer<typeof ListingSchema>;
