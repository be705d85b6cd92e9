import { z } from "@hono/zod-openapi";
import { countyField } from "../../../lib/dutch";
import {
  acrossFields,
  calendarDate,
  id,
  pagingQuery,
  pathId,
  rowId,
  takingResponse,
  text,
  upTo,
  webUrl,
} from "../../../lib/fields";
import { Contact } from "./contacts";

/** Writable user fields; `null` clears an optional field on update. */
const userFields = {
  clientId: id().nullable().openapi({ description: "Client that created the user; internal clients only" }),
  externalUserId: z
    .number()
    .int()
    .openapi({ description: "Id in the client's backend; changes by internal clients only" }),
  companyName: text(2, 255).nullable().openapi({ description: "Either companyName or lastName is mandatory" }),
  gender: z.enum(["M", "F"]).nullable(),
  firstName: text(2, 255).nullable(),
  lastName: text(2, 255)
    .nullable()
    .openapi({ description: acrossFields("Either companyName or lastName is mandatory") }),
  dateOfBirth: calendarDate().nullable(),
  address: text(2, 255).nullable(),
  houseNumber: upTo(20).nullable(),
  postalCode: upTo(10)
    .nullable()
    .openapi({ description: acrossFields("A valid Dutch postal code, required in the Netherlands; optional abroad") }),
  city: text(2, 255).nullable(),
  county: countyField(),
  country: z
    .string()
    .regex(/^([A-Z]{2})?$/, { error: "must be a two-letter country code (NL), or empty abroad" })
    .openapi({ description: "`NL` (default); another code or empty outside the Netherlands" }),
  email: z.email().max(255),
  website: webUrl(255).nullable(),
  phone: text(5, 50)
    .nullable()
    .openapi({ description: acrossFields("Either phone or cellular is required") }),
  fax: text(5, 50).nullable(),
  cellular: text(5, 50)
    .nullable()
    .openapi({ description: acrossFields("Either phone or cellular is required") }),
  subscriptions: z
    .strictObject({ stock: z.boolean().optional(), shop: z.boolean().optional() })
    .openapi({ description: "Internal clients only" }),
};

export const ContactsSummary = z.object({
  numberOfContacts: z.number().int(),
  numberOfActiveContacts: z.number().int().openapi({ description: "contacts used by active ads" }),
  contacts: z.array(Contact),
});

export const User = z
  .object({
    userId: rowId(),
    clientId: rowId().nullable(),
    externalUserId: z.number().int().nullable(),
    companyName: z.string().nullable(),
    gender: userFields.gender,
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    dateOfBirth: z.string().nullable(),
    address: z.string().nullable(),
    houseNumber: z.string().nullable(),
    postalCode: z.string().nullable(),
    city: z.string().nullable(),
    county: countyField(),
    country: z.string(),
    email: z.string(),
    website: z.string().nullable(),
    phone: z.string().nullable(),
    fax: z.string().nullable(),
    cellular: z.string().nullable(),
    subscriptions: z.object({ stock: z.boolean(), shop: z.boolean() }),
    contacts: ContactsSummary,
    created: z.string(),
    updated: z.string(),
  })
  .openapi("User");

export const Activation = z.object({ activationtoken: z.string(), validUntil: z.string() }).openapi("Activation");

export const CreatedUser = User.extend({ activation: Activation }).openapi("CreatedUser");

/** POST /users/ and PUT /users/ take a user as answers show it too; what they do not write is ignored. */
export const CreateUser = takingResponse(
  z.object(userFields).partial().extend({ externalUserId: userFields.externalUserId, email: userFields.email }),
  CreatedUser,
).openapi("CreateUser");

export const UpdateUser = takingResponse(
  z
    .object({ userId: id() })
    .extend(z.object(userFields).partial().shape)
    // Null as reads show a user without one (internal clients may clear it; a change is theirs alone).
    .extend({ externalUserId: userFields.externalUserId.nullable().optional() }),
  User,
).openapi("UpdateUser");

export type UserInput = z.infer<typeof CreateUser>;
export type UserPatch = z.infer<typeof UpdateUser>;

export const UserIdParam = z.object({ userId: pathId("userId") });
export const UsersQuery = pagingQuery(100);
export const DeleteUser = z
  .object({ userId: id(), ip: upTo(39).optional().openapi({ description: "End-user IP, for the log" }) })
  .openapi("DeleteUser");
