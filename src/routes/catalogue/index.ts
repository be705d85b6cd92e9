import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { withCache } from "../../middleware/responseCache";
import { ADS_REVISION } from "../../services/ads";
import {
  AttributesRequest,
  CatalogueEntry,
  CategoriesQuery,
  Category,
  Group,
  GroupsRequest,
  listAttributes,
  listCategories,
  listGroups,
} from "../../services/catalogue";
import { CATALOGUE_REVISION, userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, jsonBody, listEnvelope } from "../openapi";

const tags = ["Catalogue"];

const categoriesDescription =
  "Each category's group, names, the targets it can be published to and the attribute keys each target needs. The contract's change history names a categories endpoint without a path; this is it (docs/decisions.md).";

/** GET /categories/[<categoryId>]: one list operation, with or without the id. */
const respondWithCategories = (
  c: Context<AppEnv>,
  categoryId: number | undefined,
  { useCache, page, itemsPerPage, ...query }: z.infer<typeof CategoriesQuery>,
) => {
  const startedAt = Date.now();
  // With a seller, its answer follows the user (a companyName set or cleared changes the keys).
  return withCache(c, useCache, [CATALOGUE_REVISION, ...(query.userId ? [userRevision(query.userId)] : [])], async () =>
    list(
      await listCategories(serviceContext(c), {
        ...query,
        categoryId,
        page: page ?? 1,
        itemsPerPage: itemsPerPage ?? 100,
      }),
      startedAt,
    ),
  );
};

export const catalogueRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/categories",
      tags,
      summary: "Categories with their group, names, targets and mandatory attributes",
      description: categoriesDescription,
      request: { query: CategoriesQuery },
      response: listEnvelope(Category),
    }),
    async (c) => c.json(await respondWithCategories(c, undefined, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/categories/{categoryId}",
      tags,
      summary: "One category, as a list of one",
      description: categoriesDescription,
      request: { params: z.object({ categoryId: pathId("categoryId") }), query: CategoriesQuery },
      response: listEnvelope(Category),
    }),
    async (c) => c.json(await respondWithCategories(c, c.req.valid("param").categoryId, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/groups",
      tags,
      summary: "Groups (main categories) with their descriptions",
      request: { body: jsonBody(GroupsRequest) },
      response: listEnvelope(Group),
    }),
    async (c) => {
      const { useCache, ...query } = c.req.valid("json");
      const startedAt = Date.now();
      return c.json(
        await withCache(
          c,
          useCache,
          [CATALOGUE_REVISION, ...(query.userId ? [ADS_REVISION, userRevision(query.userId)] : [])],
          async () => list(await listGroups(serviceContext(c), query), startedAt),
          query,
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/attributes",
      tags,
      summary: "Attribute definitions per category, portal and locale",
      request: { body: jsonBody(AttributesRequest) },
      response: listEnvelope(CatalogueEntry),
    }),
    async (c) => {
      const { useCache, ...query } = c.req.valid("json");
      const startedAt = Date.now();
      return c.json(
        await withCache(
          c,
          useCache,
          [CATALOGUE_REVISION, ...(query.userId ? [userRevision(query.userId)] : [])],
          async () => list(await listAttributes(serviceContext(c), query), startedAt),
          query,
        ),
        200,
      );
    },
  );
