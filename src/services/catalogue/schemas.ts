import { z } from "@hono/zod-openapi";
import { commaSeparated, id, queryBool, queryId, queryInt } from "../../lib/fields";
import { keyedBy, PRODUCT_SAFETY_MARKETPLACES } from "../../lib/marketplaces";
import {
  AdStatusEnum,
  CATALOGUE_PORTALS,
  CataloguePortalEnum,
  MARKETPLACES,
  PUBLISH_TARGETS,
  PublishTargetEnum,
} from "../../lib/vocabulary";
import { LOCALES } from "./catalogue";

/** The shapes of the catalogue's answers (groups, attribute definitions) and the requests for them. */

/** Who asks a business seller for the product-safety keys, as the descriptions say it. */
const productSafetyAskers = PRODUCT_SAFETY_MARKETPLACES.join(" and ");

const locales = z
  .array(z.enum(LOCALES))
  .max(LOCALES.length)
  .optional()
  .openapi({ description: "Default: every locale (groups), nl_NL (attributes)" });
const paging = (max: number) => ({
  page: z.number().int().min(1).default(1),
  itemsPerPage: z.number().int().min(1).max(max).default(25),
});

export const CategoriesQuery = z.object({
  useCache: queryBool().optional(),
  groupId: queryInt().optional().openapi({ description: "Only this group's categories" }),
  userId: queryId()
    .optional()
    .openapi({
      description: `The seller the ads are for: \`mandatoryAttributes\` then names every key a create or publish requires of that seller, ${productSafetyAskers}'s product-safety keys included for a business seller (a user with \`companyName\`)`,
    }),
  locale: commaSeparated(LOCALES, "nl_NL, en_GB or both, comma-separated; default both").optional(),
  page: queryInt(1).optional(),
  itemsPerPage: queryInt(1, 500).optional().openapi({ description: "At most 500; default 100" }),
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
    categories: z.boolean().optional().openapi({ description: "Adds `categories`: the group's categories" }),
    ...paging(100),
  })
  .openapi("GroupsRequest");

export const AttributesRequest = z
  .object({
    useCache: z.boolean().optional(),
    categoryId: z.array(id()).max(500).optional().openapi({ description: "When omitted, all categories" }),
    locale: locales,
    userId: id()
      .optional()
      .openapi({
        description: `Only the portals the user is connected to, and portal_own; \`mandatory\` then says what a create or publish requires of that seller (${productSafetyAskers}'s product-safety keys for a business seller)`,
      }),
    conversiontree: z.boolean().optional().openapi({ description: "Listed by the contract; changes nothing here" }),
    ...paging(500),
  })
  .openapi("AttributesRequest");

/** The catalogue's response shapes. */
const descriptions = z.array(z.object({ locale: z.enum(LOCALES), description: z.string() }));

export const Category = z
  .object({
    categoryId: z.number().int(),
    groupId: z.number().int(),
    descriptions,
    portals: z.array(PublishTargetEnum).openapi({
      description:
        "The targets an ad of this category can be published to: a marketplace where the category has its attribute definitions and prices, and the website always",
    }),
    placementPrices: z
      .array(z.object({ portal: PublishTargetEnum, price: z.number().int().openapi({ description: "Cents" }) }))
      .openapi({
        description:
          "What placing an ad of this category costs on each target it is offered on, in cents, as a publish charges it (its features are extra; the website is free): `POST /publish/preflight` says the same per ad",
      }),
    mandatoryAttributes: z.array(z.object({ portal: CataloguePortalEnum, keys: z.array(z.string()) })).openapi({
      description: `Per attribute set, the keys an ad must give: ${MARKETPLACES.map((m) => `\`${m}\``).join(", ")}, and \`portal_own\` (the website's own set, which asks for none: a publish to \`website\` checks no attributes). With \`userId\`, for that seller: ${productSafetyAskers} asks a business seller (a user with \`companyName\`) for the product-safety keys too, unless a manufacturer is attached`,
    }),
  })
  .openapi("Category", {
    // From the seeded catalogue: mopeds, on both marketplaces and the website.
    example: {
      categoryId: 9204,
      groupId: 92,
      descriptions: [
        { locale: "nl_NL", description: "Brommers" },
        { locale: "en_GB", description: "Mopeds" },
      ],
      portals: [...PUBLISH_TARGETS],
      placementPrices: [
        { portal: "portal_a", price: 295 },
        { portal: "portal_b", price: 256 },
        { portal: "website", price: 0 },
      ],
      mandatoryAttributes: CATALOGUE_PORTALS.map((portal) => ({
        portal,
        keys: portal === "portal_own" ? [] : ["condition"],
      })),
    },
  });

export const Group = z
  .object({
    groupId: z.number().int(),
    descriptions: z.array(z.object({ locale: z.string(), description: z.string() })),
    availability: z.object(keyedBy(PUBLISH_TARGETS, () => z.boolean())).optional(),
    total: z.number().int().optional(),
    categories: z.array(Category).optional(),
  })
  .openapi("Group", {
    // From the seeded catalogue.
    example: {
      groupId: 92,
      descriptions: [
        { locale: "nl_NL", description: "Fietsen en Brommers" },
        { locale: "en_GB", description: "Bicycles and mopeds" },
      ],
      availability: keyedBy(PUBLISH_TARGETS, () => true),
    },
  });

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
    groupId: z.number().int(),
    categoryDescription: z.string().openapi({ description: "The category's name, in the first locale asked for" }),
    attributes: z.array(
      z.object({
        portal: CataloguePortalEnum,
        locale: z.string(),
        attributes: z.array(AttributeDefinition),
      }),
    ),
  })
  .openapi("CatalogueEntry", {
    // From the seeded catalogue: two of the mopeds' definitions on the first marketplace.
    example: {
      categoryId: 9204,
      groupId: 92,
      categoryDescription: "Brommers",
      attributes: [
        {
          portal: MARKETPLACES[0],
          locale: "nl_NL",
          attributes: [
            {
              key: "condition",
              label: "Conditie",
              values: ["gebruikt", "nieuw", "zo goed als nieuw"],
              type: "STRING",
              sort: 10,
              minimum: 0,
              maximum: 0,
              unit: "",
              mandatory: true,
              writable: true,
              updatable: true,
              searchable: true,
            },
            {
              key: "frameSize",
              label: "Framemaat",
              values: "",
              type: "NUMBER",
              sort: 40,
              minimum: 30,
              maximum: 70,
              unit: "cm",
              mandatory: false,
              writable: true,
              updatable: true,
              searchable: true,
            },
          ],
        },
      ],
    },
  });
