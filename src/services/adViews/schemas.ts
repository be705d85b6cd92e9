import { z } from "@hono/zod-openapi";
import { PRICE_MODELS } from "../../db/schema";
import { fromBase64Url, toBase64Url } from "../../lib/crypto";
import { acrossFields, queryBool, queryId, queryInt, rowId, searchText, takingResponse } from "../../lib/fields";
import { keyedBy, MARKETPLACE_PROFILES } from "../../lib/marketplaces";
import { AdStatusEnum, AdTypeEnum, MARKETPLACES, MarketplaceEnum, PUBLISH_TARGETS } from "../../lib/vocabulary";
import { AdSetting, CreateAdFields, UpdateAdFields } from "../ads/schemas";
import { PortalStatus } from "../publishing/schemas";

// The read model's shapes: the ads list query with its page cursor, and an ad as GET answers it, which
// POST and PUT take back whole (read-only fields ignored).

// ---- search (GET /ads/) ----

/** What `searchportal` names: a publish target, or `meta` for any of them. */
const SEARCH_PORTALS = [...PUBLISH_TARGETS, "meta"];

export const ORDER_FIELDS = [
  "price",
  "closeDate",
  ...MARKETPLACES.map((marketplace) => MARKETPLACE_PROFILES[marketplace].closeDateOrder),
  "closeDateMeta",
  "created",
  "updated",
  "title",
] as const;

const numeric = () =>
  z.union([
    z.number(),
    z
      .string()
      .regex(/^-?\d+(\.\d+)?$/, { error: "must be a number" })
      .transform(Number),
  ]);

export const SearchAttribute = z
  .strictObject({
    portal: MarketplaceEnum,
    locale: z.literal("nl_NL").default("nl_NL"),
    key: z.string().min(1).max(100),
    value_equals: z.union([z.string(), z.number()]).optional(),
    value_equals_list: z
      .array(z.union([z.string(), z.number()]))
      .min(1)
      .max(50)
      .optional(),
    value_lessequal: numeric().optional(),
    value_greaterequal: numeric().optional(),
  })
  .refine(
    (a) =>
      a.value_equals !== undefined ||
      a.value_equals_list !== undefined ||
      a.value_lessequal !== undefined ||
      a.value_greaterequal !== undefined,
    { error: "one of value_equals, value_equals_list, value_lessequal or value_greaterequal is required" },
  )
  .openapi({
    description: acrossFields("One of value_equals, value_equals_list, value_lessequal or value_greaterequal"),
  });

// Typed as ids (what a client holds) or as the comma-separated text clients of 1.1 sent (so both compile);
// the query string carries them as text. Each id as `queryId` takes it: positive, within 2^53 − 1.
const ID_LIST = /^[1-9]\d{0,15}(,[1-9]\d{0,15})+$/;
const idList = z
  .union([
    queryId().transform((adId) => [adId]),
    z
      .string()
      .regex(ID_LIST, { error: "must be an id, an array of ids or comma-separated ids" })
      .transform((text) => text.split(",").map(Number))
      .pipe(z.array(z.number().max(Number.MAX_SAFE_INTEGER)))
      .openapi({ type: "string", pattern: ID_LIST.source, description: "Comma-separated ids" }),
    z.array(queryId()).max(500),
  ])
  .openapi({ description: "One id, an array (adId[]=1&adId[]=2) or comma-separated ids" });

/**
 * Where a page of a list starts, as the `nextCursor` of the page before hands it out: the page's number
 * and, in the order by creation, the id of the last ad before it, so the page seeks past that id
 * instead of skipping the ads before it.
 */
const PagePosition = z.object({
  page: z.number().int().min(1),
  after: z.number().int().min(0).optional(),
  descending: z.boolean().optional(),
});
export type PagePositionValue = z.infer<typeof PagePosition>;

/** A page position as an opaque token (base64url of its JSON). */
export const encodeCursor = (position: PagePositionValue) => toBase64Url(JSON.stringify(position));

const pageCursor = z
  .string()
  .max(200)
  .transform((token, ctx) => {
    try {
      return PagePosition.parse(JSON.parse(fromBase64Url(token)));
    } catch {
      ctx.addIssue({ code: "custom", message: "is not a cursor this API handed out" });
      return z.NEVER;
    }
  });

export const AdsQuery = z
  .object({
    useCache: queryBool().optional(),
    page: queryInt(1).optional().default(1),
    cursor: pageCursor.optional().openapi({
      description:
        "The previous page's `nextCursor`: the next page, read from where that one ended (a deep page costs what a first one does). Replaces `page`.",
      example: "eyJwYWdlIjoyLCJhZnRlciI6MTAyNX0",
    }),
    // Its bound depends on `simple`: checked once, below, so one message says which applies.
    itemsPerPage: queryInt(1)
      .optional()
      .openapi({ maximum: 500, description: acrossFields("Default 25; max 25, or 500 with simple") }),
    simple: queryBool().optional().default(false),
    order: z
      .array(z.strictObject({ field: z.enum(ORDER_FIELDS), descending: queryBool().optional().default(false) }))
      .max(5)
      .optional()
      .openapi({ description: "order[<n>][field] and order[<n>][descending]; default created ascending" }),
    adId: idList.optional(),
    userId: queryId().optional(),
    folderId: queryId().optional(),
    status: AdStatusEnum.optional(),
    type: AdTypeEnum.optional(),
    title: searchText(60).optional().openapi({ description: "Part of the title" }),
    description: searchText(200).optional().openapi({ description: "Part of the description" }),
    groupId: queryInt().optional(),
    groupDescription: searchText(100).optional().openapi({ description: "Part of the group description" }),
    categoryId: queryInt().optional(),
    categoryDescription: searchText(100).optional().openapi({ description: "Part of the category description" }),
    searchkeyword: searchText(200)
      .regex(/\S/, { error: "must contain a word" })
      .optional()
      .openapi({
        description: "Words in title or description (each matched as a word prefix)",
        // Both checks in one pattern: no control characters, and something besides white space.
        // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
        pattern: /^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$/.source,
      }),
    searchportal: z
      .string()
      .regex(new RegExp(`^!?(${SEARCH_PORTALS.join("|")})$`), {
        error: `must be ${SEARCH_PORTALS.slice(0, -1).join(", ")} or meta, optionally prefixed with !`,
      })
      .optional()
      .openapi({
        description: "Only ads active on the portal; `!` inverts; `meta` (internal clients) means any portal",
      }),
    searchattributes: z
      .array(SearchAttribute)
      .max(10)
      .optional()
      .openapi({ description: acrossFields("With categoryId", "searchattributes[<n>][key]=…") }),
    searchmanufacturer: queryBool().optional(),
  })
  .superRefine((q, ctx) => {
    const most = q.simple ? 500 : 25;
    if (q.itemsPerPage !== undefined && q.itemsPerPage > most) {
      const message = q.simple ? "must be at most 500" : "must be at most 25 (500 with simple=true)";
      ctx.addIssue({ code: "custom", path: ["itemsPerPage"], message });
    }
    if (q.searchattributes && q.categoryId === undefined) {
      ctx.addIssue({ code: "custom", path: ["categoryId"], message: "is required with searchattributes" });
    }
  });

export type AdsQueryInput = z.infer<typeof AdsQuery>;
export type SearchAttributeInput = z.infer<typeof SearchAttribute>;

// ---- an ad as read ----

const ActionPrice = z.object({
  action: z.string(),
  priceInternal: z.number().int(),
  priceExternal: z.number().int(),
  priceTotal: z.number().int(),
  priceNative: z.number().int(),
});

const simpleAdShape = {
  adId: rowId(),
  created: z.string(),
  updated: z.string(),
  userId: rowId(),
  contactId: rowId().nullable(),
  folderId: rowId().nullable(),
  status: AdStatusEnum,
  externalAdId: z.number().int().nullable(),
  type: AdTypeEnum,
  title: z.string(),
  imagetext: z.string().nullable(),
  groupId: z.number().int().nullable(),
  groupDescription: z.string().nullable(),
  categoryId: z.number().int().nullable(),
  categoryDescription: z.string().nullable(),
  url: z.string().nullable(),
  price: z.object({
    model: z.enum(PRICE_MODELS),
    price: z.number().int().nullable(),
    minimumBid: z.number().int().nullable(),
    shippingCosts: z.number().int().nullable(),
    retailPrice: z.number().int().nullable(),
  }),
  prices: z.object(keyedBy(MARKETPLACES, () => z.array(ActionPrice))),
  images: z.union([z.literal(false), z.array(z.record(z.string(), z.unknown()))]),
  portals: z.array(PortalStatus),
  misc: z.object({ licensePlate: z.string().nullable() }),
  manufacturerId: rowId().nullable(),
};

export const SimpleAd = z.object(simpleAdShape).openapi("SimpleAd");

export const Ad = z
  .object({
    ...simpleAdShape,
    description: z.string(),
    attributes: z.array(
      z.object({
        portal: MarketplaceEnum,
        locale: z.literal("nl_NL"),
        attributes: z.array(z.object({ key: z.string(), value: z.union([z.string(), z.number()]), label: z.string() })),
      }),
    ),
    settings: z.array(AdSetting),
    contact: z.union([z.literal(false), z.record(z.string(), z.unknown())]),
    provider: z.record(z.string(), z.string()).nullable(),
  })
  .openapi("Ad");

/** POST /ads/: every field of the response is taken too, read-only ones ignored (a read ad can be copied). */
export const CreateAd = takingResponse(CreateAdFields, Ad).openapi("CreateAd");

/** PUT /ads/: the ad as GET answers it is taken back whole; the fields fixed after creation must not change. */
export const UpdateAd = takingResponse(UpdateAdFields, Ad).openapi("UpdateAd");
