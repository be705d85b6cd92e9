import { list, ok } from "../../lib/envelope";
import { flushRequestedUpdates } from "../../middleware/afterWrites";
import { answerEntityTag, withCache } from "../../middleware/responseCache";
import {
  ADS_REVISION,
  AttachManufacturer,
  attachManufacturer,
  CreateManufacturer,
  createManufacturer,
  DeleteManufacturer,
  deleteManufacturer,
  Manufacturer,
  ManufacturersQuery,
  searchManufacturers,
  UpdateManufacturer,
  updateManufacturer,
} from "../../services/ads";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Manufacturers"];

const router = createRouter();
router.use("/manufacturers/batch", flushRequestedUpdates);

export const manufacturersRouter = router
  .openapi(
    apiRoute({
      method: "get",
      path: "/manufacturers",
      entityTag: true,
      tags,
      summary: "Search manufacturer records (product-safety data)",
      description: "With `userId`, the answer carries that user's `ETag` (for a conditional `PUT` or `DELETE`).",
      request: { query: ManufacturersQuery },
      response: listEnvelope(Manufacturer),
    }),
    async (c) => {
      const { useCache, ...query } = c.req.valid("query");
      const startedAt = Date.now();
      // One user's records carry the user's ETag, for a conditional PUT or DELETE of one of them.
      if (query.userId !== undefined) await answerEntityTag(c, userRevision(query.userId));
      return c.json(
        await withCache(c, useCache, [ADS_REVISION], async () =>
          list(await searchManufacturers(serviceContext(c), query), startedAt),
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
      entityTag: true,
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
      entityTag: true,
      tags,
      summary: "Remove a manufacturer record (ads using it keep none)",
      request: { body: jsonBody(DeleteManufacturer) },
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
