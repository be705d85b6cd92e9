import { z } from "@hono/zod-openapi";
import { id } from "../../lib/fields";
import { AdStatusEnum, CataloguePortalEnum } from "../../lib/vocabulary";
import { LOCALES } from "./catalogue";

/** The shapes of the catalogue's answers (groups, attribute definitions) and the requests for them. */

const locales = z
  .array(z.enum(LOCALES))
  .max(LOCALES.length)
  .optional()
  .openapi({ description: "Default: every locale (groups), nl_NL (attributes)" });
const paging = (max: number) => ({
  page: z.number().int().min(1).default(1),
  itemsPerPage: z.number().int().min(1).max(max).default(25),
});

export const GroupsRequest = z
  .object({
    useCache: z.boolean().optional(),
    groupId: z.array(id()).max(500).optional().openapi({ description: "When omitted, all groups" }),
    userId: id().optional().openapi({ description: "Only the groups of this user's ads" }),
    status: AdStatusEnum.optional().openapi({ description: "With userId: the ads' status; default active" }),
    availability: z.boolean().optional().openapi({ description: "Adds per-portal availability" }),
    locale: locales,
    total: z.boolean().optional().openapi({ description: "Adds `total`: the number of the user's ads in the group" }),
    ...paging(100),
  })
  .openapi("GroupsRequest");

export const Group = z
  .object({
    groupId: z.number().int(),
    descriptions: z.array(z.object({ locale: z.string(), description: z.string() })),
    availability: z.object({ portal_a: z.boolean(), portal_b: z.boolean(), website: z.boolean() }).optional(),
    total: z.number().int().optional(),
  })
  .openapi("Group");

export const AttributesRequest = z
  .object({
    useCache: z.boolean().optional(),
    categoryId: z.array(id()).max(500).optional().openapi({ description: "When omitted, all categories" }),
    locale: locales,
    userId: id().optional().openapi({ description: "Only the portals the user is connected to, and portal_own" }),
    conversiontree: z.boolean().optional().openapi({ description: "Listed by the contract; changes nothing here" }),
    ...paging(500),
  })
  .openapi("AttributesRequest");

export const AttributeDefinition = z
  .object({
    key: z.string(),
    label: z.string(),
    values: z
      .union([z.array(z.string()), z.literal("")])
      .openapi({ description: "Allowed options, or an empty string for free text" }),
    type: z.enum(["DOUBLE", "LIST", "NUMBER", "STRING", "TEXT"]),
    sort: z.number().int(),
    minimum: z.number().int().openapi({ description: "0 where the attribute has no lower bound" }),
    maximum: z.number().int().openapi({ description: "0 where the attribute has no upper bound" }),
    unit: z.string(),
    mandatory: z.boolean(),
    writable: z.boolean(),
    updatable: z.boolean(),
    searchable: z.boolean(),
  })
  .openapi("AttributeDefinition");

export const CatalogueEntry = z
  .object({
    categoryId: z.number().int(),
    attributes: z.array(
      z.object({
        portal: CataloguePortalEnum,
        locale: z.string(),
        attributes: z.array(AttributeDefinition),
      }),
    ),
  })
  .openapi("CatalogueEntry");
