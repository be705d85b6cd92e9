import { z } from "@hono/zod-openapi";
import {
  acrossFields,
  id,
  pagingQuery,
  queryBool,
  queryId,
  queryInt,
  rowId,
  takingResponse,
  upTo,
} from "../../lib/fields";

/** The shapes of manufacturers (product-safety data) and their attachment to ads. */

const fields = {
  userId: id(),
  groupId: id().nullable().optional(),
  categoryId: id()
    .nullable()
    .optional()
    .openapi({ description: acrossFields("A category of `groupId` when both are given") }),
  brands: z.array(z.string().min(1).max(100)).max(50).optional(),
  manufacturerTradename: z.string().min(1).max(255),
  manufacturerAddress: z.string().min(1).max(1024),
  manufacturerEmail: z.email().max(255),
  description: upTo(4096).optional().openapi({ description: "Free text for internal use" }),
};

export const Manufacturer = z
  .object({
    manufacturerId: rowId().nullable().openapi({ description: "null for a suggestion" }),
    userId: rowId().nullable(),
    groupId: z.number().int().nullable(),
    categoryId: z.number().int().nullable(),
    categoryDescription: z.string(),
    brands: z.array(z.string()),
    manufacturerTradename: z.string(),
    manufacturerAddress: z.string(),
    manufacturerEmail: z.string(),
    description: z.string(),
    suggestion: z.boolean().optional().openapi({ description: "true: suggested by aiassist, not stored" }),
  })
  .openapi("Manufacturer");

/** POST and PUT /manufacturers/ take a manufacturer as answers show it too (`categoryDescription` ignored). */
export const CreateManufacturer = takingResponse(z.object(fields), Manufacturer).openapi("CreateManufacturer");
export const DeleteManufacturer = z.object({ manufacturerId: id() }).openapi("DeleteManufacturer");
export const UpdateManufacturer = takingResponse(
  z.object({
    manufacturerId: id(),
    ...fields,
    userId: fields.userId.optional(),
    manufacturerTradename: fields.manufacturerTradename.optional(),
    manufacturerAddress: fields.manufacturerAddress.optional(),
    manufacturerEmail: fields.manufacturerEmail.optional(),
  }),
  Manufacturer,
).openapi("UpdateManufacturer");

export const ManufacturersQuery = pagingQuery(100).extend({
  manufacturerId: queryId().optional(),
  userId: queryId().optional(),
  groupId: queryInt().optional(),
  categoryId: queryInt().optional().openapi({ description: "When used, categoryDescription is ignored" }),
  brand: z.string().max(100).optional(),
  categoryDescription: z.string().max(100).optional(),
  manufacturerTradename: z.string().max(255).optional(),
  aiassist: queryBool().optional().openapi({ description: "When nothing stored matches, suggest data for the brand" }),
});

export const AttachManufacturer = z
  .object({
    manufacturerId: id(),
    userId: id(),
    adId: z
      .union([id(), z.array(id()).max(1000)])
      .optional()
      .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]))
      .openapi({ description: "When omitted: all the user's ads in the manufacturer's category" }),
    publish: z
      .boolean()
      .optional()
      .openapi({ description: "Also update the ads on every portal they are published to" }),
  })
  .openapi("AttachManufacturer");
