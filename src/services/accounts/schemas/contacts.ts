import { z } from "@hono/zod-openapi";
import { countyField } from "../../../lib/dutch";
import { id, pagingQuery, rowId, takingResponse, text, upTo, webUrl } from "../../../lib/fields";

const contactFields = {
  name: text(2, 255),
  address: text(2, 255),
  houseNumber: upTo(20),
  postalCode: upTo(10).nullable().openapi({ description: "Valid Dutch postal code; optional abroad (empty county)" }),
  city: text(2, 255),
  county: countyField(),
  phone: text(5, 50),
  website: webUrl(255).nullable(),
  chathandle: upTo(255).nullable().openapi({ description: "Messenger handle" }),
};

export const DeleteContact = z.object({ userId: id(), contactId: id() }).openapi("DeleteContact");

export const Contact = z
  .object({
    userId: rowId(),
    contactId: rowId(),
    active: z.boolean().openapi({ description: "used by one or more active ads" }),
    name: z.string(),
    address: z.string(),
    houseNumber: z.string(),
    postalCode: z.string().nullable(),
    city: z.string(),
    county: countyField(),
    country: z.string(),
    phone: z.string(),
    website: z.string().nullable(),
    chathandle: z.string().nullable(),
  })
  .openapi("Contact");

/** POST and PUT /contacts/ take a contact as answers show it too; `active` and `country` are ignored. */
export const CreateContact = takingResponse(
  z.object({
    userId: id(),
    ...contactFields,
    postalCode: contactFields.postalCode.optional(),
    website: contactFields.website.optional(),
    chathandle: contactFields.chathandle.optional(),
  }),
  Contact,
).openapi("CreateContact");

export const UpdateContact = takingResponse(
  z.object({ userId: id(), contactId: id() }).extend(z.object(contactFields).partial().shape),
  Contact,
).openapi("UpdateContact");

export type ContactInput = z.infer<typeof CreateContact>;
export type ContactPatch = z.infer<typeof UpdateContact>;

export const ContactsQuery = pagingQuery(100);
