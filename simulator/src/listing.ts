import { z } from "zod";

const amount = z.number().int().nonnegative().nullable();
const text = z.string().nullable();

/**
 * The listing body the marketplace's API takes on create and update, as its documentation would state
 * it. Strict: a field it does not know is refused, so a gateway that sends what the marketplace does
 * not define finds out here, as it would at a real one.
 */
export const MarketplaceListing = z
  .object({
    externalRef: z.string().min(1),
    categoryId: z.number().int(),
    title: z.string(),
    description: z.string(),
    price: z
      .object({ model: z.string(), price: amount, minimumBid: amount, shippingCosts: amount, retailPrice: amount })
      .strict(),
    attributes: z.array(z.object({ key: z.string(), value: z.union([z.string(), z.number()]) }).strict()),
    contact: z
      .object({
        name: z.string(),
        address: text,
        postalCode: text,
        city: text,
        phone: text,
        email: text,
        website: text,
      })
      .strict()
      .nullable(),
    allowContactByEmail: z.boolean(),
    allowbids: z.boolean(),
    imagetext: text,
    url: text,
    video: text,
    images: z.array(z.string()),
  })
  .strict();

export type MarketplaceListing = z.infer<typeof MarketplaceListing>;
