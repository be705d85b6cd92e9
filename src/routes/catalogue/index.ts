import { list } from "../../lib/envelope";
import { withCache } from "../../middleware/responseCache";
import { ADS_REVISION } from "../../services/ads";
import {
  AttributesRequest,
  CatalogueEntry,
  Group,
  GroupsRequest,
  listAttributes,
  listGroups,
} from "../../services/catalogue";
import { CATALOGUE_REVISION, userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, jsonBody, listEnvelope } from "../openapi";

const tags = ["Catalogue"];
export const catalogueRouter = createRouter()
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
          [CATALOGUE_REVISION, ...(query.userId ? [ADS_REVISION] : [])],
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
