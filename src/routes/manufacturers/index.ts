import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { id, pagingQuery, queryBool, queryInt, upTo } from "../../lib/fields";
import { flushRequestedUpdates } from "../../middleware/afterWrites";
import { withCache } from "../../middleware/responseCache";
import {
  ADS_REVISION,
  attachManufacturer,
  builtInAssistant,
  createManufacturer,
  deleteManufacturer,
  searchManufacturers,
  updateManufacturer,
} from "../../services/ads";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Manufacturers"];

const fields = {
  userId: id(),
  groupId: id().nullable().optional(),
  categoryId: id().nullable().optional(),
  brands: z.array(z.string().min(1).max(100)).max(50).optional(),
  manufacturerTradename: z.string().min(1).max(255),
  manufacturerAddress: z.string().min(1).max(1024),
  manufacturerEmail: z.email().max(255),
  description: upTo(4096).optional().openapi({ description: "Free text for internal use" }),
};

const CreateManufacturer = z.object(fields).openapi("CreateManufacturer");
const UpdateManufacturer = z
  .object({
    manufacturerId: id(),
    ...fields,
    userId: fields.userId.optional(),
    manufacturerTradename: fields.manufacturerTradename.optional(),
    manufacturerAddress: fields.manufacturerAddress.optional(),
    manufacturerEmail: fields.manufacturerEmail.optional(),
  })
  .openapi("UpdateManufacturer");

const Manufacturer = z
  .object({
    manufacturerId: z.number().int().nullable().openapi({ description: "null for a suggestion" }),
    userId: z.number().int().nullable(),
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

const ManufacturersQuery = pagingQuery(100).extend({
  manufacturerId: queryInt().optional(),
  userId: queryInt().optional(),
  groupId: queryInt().optional(),
  categoryId: queryInt().optional().openapi({ description: "When used, categoryDescription is ignored" }),
  brand: z.string().max(100).optional(),
  categoryDescription: z.string().max(100).optional(),
  manufacturerTradename: z.string().max(255).optional(),
  aiassist: queryBool().optional().openapi({ description: "When nothing stored matches, suggest data for the brand" }),
});

const AttachManufacturer = z
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

const router = createRouter();
router.use("/manufacturers/batch", flushRequestedUpdates);

export const manufacturersRouter = router
  .openapi(
    apiRoute({
      method: "get",
      path: "/manufacturers",
      tags,
      summary: "Search manufacturer records (product-safety data)",
      request: { query: ManufacturersQuery },
      response: listEnvelope(Manufacturer),
    }),
    async (c) => {
      const { useCache, ...query } = c.req.valid("query");
      const startedAt = Date.now();
      return c.json(
        await withCache(c, useCache, [ADS_REVISION], async () =>
          list(await searchManufacturers(serviceContext(c), query, builtInAssistant), startedAt),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/manufacturers",
      tags,
      summary: "Create a manufacturer record",
      request: { body: jsonBody(CreateManufacturer) },
      response: envelope(Manufacturer),
    }),
    async (c) => {
      return c.json(ok(await createManufacturer(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/manufacturers",
      tags,
      summary: "Update a manufacturer record; answers it",
      request: { body: jsonBody(UpdateManufacturer) },
      response: envelope(Manufacturer),
    }),
    async (c) => {
      return c.json(ok(await updateManufacturer(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/manufacturers",
      tags,
      summary: "Remove a manufacturer record (ads using it keep none)",
      request: { body: jsonBody(z.object({ manufacturerId: id() }).openapi("DeleteManufacturer")) },
      response: envelope(EmptyData),
    }),
    async (c) => {
      await deleteManufacturer(serviceContext(c), c.req.valid("json").manufacturerId);
      return c.json(ok([]), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/manufacturers/batch",
      tags,
      summary: "Attach a manufacturer to ads; with publish, request their update on every portal",
      request: { body: jsonBody(AttachManufacturer) },
      response: envelope(EmptyData),
    }),
    async (c) => {
      await attachManufacturer(serviceContext(c), c.req.valid("json"));
      return c.json(ok([]), 200);
    },
  );
