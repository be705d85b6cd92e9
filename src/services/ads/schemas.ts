import { z } from "@hono/zod-openapi";
import { PRICE_MODELS, REMOVED_PRICE_MODELS } from "../../db/schema";
import { fromBase64Url, toBase64Url } from "../../lib/crypto";
import { countyField } from "../../lib/dutch";
import { ErrorDetail } from "../../lib/errors";
import {
  fixed,
  id,
  queryBool,
  queryInt,
  readOnly,
  searchText,
  takingAnswer,
  text,
  upTo,
  webUrl,
} from "../../lib/fields";
import { AdStatusEnum, AdTypeEnum, MARKETPLACES, MarketplaceEnum, PublishTargetEnum } from "../../lib/vocabulary";

const cents = () => z.number().int().min(0).max(1_000_000_000);

export const AttributeValue = z
  .strictObject({
    key: z.string().min(1).max(100),
    value: z.union([z.string().max(4096), z.number()]),
    label: readOnly(),
  })
  .openapi("AttributeValue");

const attributeValues = z.array(AttributeValue).max(200);

/** An attribute set of one portal: its values under `values`, or under `attributes` as answers name them. */
export const AdAttributesInput = z
  .strictObject({
    portal: MarketplaceEnum,
    locale: z.literal("nl_NL").default("nl_NL"),
    values: attributeValues.optional(),
    attributes: attributeValues.optional().openapi({ description: "The answers' name for `values`" }),
  })
  .superRefine((set, ctx) => {
    if (set.values === undefined && set.attributes === undefined)
      ctx.addIssue({ code: "custom", path: ["values"], message: "is required" });
    if (set.values !== undefined && set.attributes !== undefined)
      ctx.addIssue({ code: "custom", path: ["attributes"], message: "give values or attributes, not both" });
  })
  .transform(({ attributes, values, ...set }) => ({ ...set, values: values ?? attributes ?? [] }))
  .openapi("AdAttributesInput", {
    example: { portal: "portal_a", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
  });

/**
 * Price object, in the writes' spelling (`retail`) or the answers' (`retailPrice`, `null` for an absent
 * amount); the removed models are refused with a message that names them.
 */
export const PriceInput = z
  .strictObject({
    model: z.string().openapi({ enum: [...PRICE_MODELS], description: "fixed, bidding, see description, reserved" }),
    price: cents().nullable().optional().openapi({ description: "Cents; required for fixed and bidding" }),
    minimumBid: cents().nullable().optional().openapi({ description: "Cents; required for bidding" }),
    shippingCosts: cents().nullable().optional(),
    retail: cents().nullable().optional().openapi({ description: "Returned as retailPrice" }),
    retailPrice: cents().nullable().optional().openapi({ description: "The answers' name for `retail`" }),
  })
  .superRefine((price, ctx) => {
    if ((REMOVED_PRICE_MODELS as readonly string[]).includes(price.model)) {
      ctx.addIssue({
        code: "custom",
        path: ["model"],
        message: `the price model "${price.model}" has been removed; use one of: ${PRICE_MODELS.join(", ")}`,
      });
    } else if (!(PRICE_MODELS as readonly string[]).includes(price.model)) {
      ctx.addIssue({ code: "custom", path: ["model"], message: `must be one of: ${PRICE_MODELS.join(", ")}` });
    }
    if ((price.model === "fixed" || price.model === "bidding") && price.price == null) {
      ctx.addIssue({ code: "custom", path: ["price"], message: `is required for model ${price.model}` });
    }
    if (price.model === "bidding" && price.minimumBid == null) {
      ctx.addIssue({ code: "custom", path: ["minimumBid"], message: "is required for model bidding" });
    }
    if (price.retail != null && price.retailPrice != null && price.retail !== price.retailPrice) {
      ctx.addIssue({ code: "custom", path: ["retailPrice"], message: "must equal retail when both are given" });
    }
  })
  .transform(({ retailPrice, ...price }) => ({ ...price, retail: price.retail ?? retailPrice }))
  .openapi("PriceInput");

// No regex flags: the pattern goes into the OpenAPI document, where JSON Schema has none.
const MP4_URL = /^([hH][tT][tT][pP][sS]?:\/\/)?[^\s/]+\.[^\s/]+\/\S*\.[mM][pP]4(\?\S*)?$/;

export const AdSettingInput = z
  .strictObject({
    portal: MarketplaceEnum,
    showcontact: z.boolean().optional(),
    autoreplace: z
      .boolean()
      .optional()
      .openapi({ description: "Re-publish at the end of the listing period; default false" }),
    video: webUrl(1024).regex(MP4_URL, { error: "must be the URL of an mp4 video" }).nullable().optional(),
  })
  .openapi("AdSettingInput");

const adSettingsList = z
  .array(AdSettingInput)
  .max(MARKETPLACES.length)
  .refine((list) => new Set(list.map((s) => s.portal)).size === list.length, { error: "each portal may appear once" });

const attributesList = z
  .array(AdAttributesInput)
  .max(MARKETPLACES.length)
  .refine((list) => new Set(list.map((a) => a.portal)).size === list.length, { error: "each portal may appear once" });

export const Provider = z
  .strictObject({
    name: text(2, 255).optional(),
    address: text(2, 255).optional(),
    houseNumber: upTo(20).optional(),
    postalCode: upTo(10).optional(),
    city: text(2, 255).optional(),
    county: countyField().optional(),
    country: z
      .string()
      .regex(/^([A-Z]{2})?$/, { error: "must be a two-letter country code, or empty" })
      .optional(),
    phone: text(5, 50).optional(),
  })
  .openapi("Provider");

const Misc = z
  .strictObject({ licensePlate: upTo(8).nullable().optional().openapi({ description: "Automotive categories only" }) })
  .openapi("Misc");

const adFields = {
  contactId: id().nullable().optional(),
  folderId: id().nullable().optional(),
  status: AdStatusEnum.optional(),
  type: AdTypeEnum.optional(),
  title: text(5, 60),
  imagetext: upTo(18).nullable().optional(),
  description: text(5, 65536).openapi({ description: "HTML limited to b, strong, u, ul, li, br (sanitised)" }),
  attributes: attributesList,
  url: webUrl(1024).nullable().optional(),
  price: PriceInput,
  settings: adSettingsList.optional(),
  misc: Misc.optional(),
  provider: Provider.nullable().optional(),
};

export const PatchAd = z
  .strictObject({ adId: id(), status: AdStatusEnum }, { error: "cannot be patched; PATCH changes only status" })
  .openapi("PatchAd");

const adIdList = z.array(id()).min(1).max(100);
export const PatchAdsBatch = z
  .object({
    userId: id().optional().openapi({ description: "When given, every ad must belong to this user" }),
    adId: adIdList,
    status: AdStatusEnum,
  })
  .openapi("PatchAdsBatch");
export const DeleteAdsBatch = z
  .object({
    userId: id().optional().openapi({ description: "When given, every ad must belong to this user" }),
    adId: adIdList,
  })
  .openapi("DeleteAdsBatch");

export const BatchItemResult = z
  .object({
    adId: z.number().int(),
    result: z.boolean(),
    errors: z.array(z.string()),
    errorDetails: z.array(ErrorDetail).openapi({ description: "The errors with their codes; empty when done" }),
  })
  .openapi("AdBatchItemResult");
export type BatchItemResult = z.infer<typeof BatchItemResult>;

// ---- search (GET /ads/) ----

export const ORDER_FIELDS = [
  "price",
  "closeDate",
  "closeDatePortalA",
  "closeDatePortalB",
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
  );

const idList = z
  .union([
    z.string().regex(/^\d+(,\d+)*$/, { error: "must be an id, an array of ids or comma-separated ids" }),
    z.array(z.string().regex(/^\d+$/, { error: "must be an id" })).max(500),
  ])
  .transform((v) => (Array.isArray(v) ? v : v.split(",")).map(Number))
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
      .openapi({ maximum: 500, description: "Default 25; max 25, or 500 with simple" }),
    simple: queryBool().optional().default(false),
    order: z
      .array(z.strictObject({ field: z.enum(ORDER_FIELDS), descending: queryBool().optional().default(false) }))
      .max(5)
      .optional()
      .openapi({ description: "order[<n>][field] and order[<n>][descending]; default created ascending" }),
    adId: idList.optional(),
    userId: queryInt().optional(),
    folderId: queryInt().optional(),
    status: AdStatusEnum.optional(),
    type: AdTypeEnum.optional(),
    title: searchText(60).optional().openapi({ description: "Part of the title" }),
    description: searchText(200).optional().openapi({ description: "Part of the description" }),
    groupId: queryInt().optional(),
    groupDescription: searchText(100).optional().openapi({ description: "Part of the group description" }),
    categoryId: queryInt().optional(),
    categoryDescription: searchText(100).optional().openapi({ description: "Part of the category description" }),
    searchkeyword: searchText(200)
      .refine((value) => value.trim() !== "", { error: "must contain a word" })
      .optional()
      .openapi({ description: "Words in title or description (each matched as a word prefix)" }),
    searchportal: z
      .string()
      .regex(/^!?(portal_a|portal_b|website|meta)$/, {
        error: "must be portal_a, portal_b, website or meta, optionally prefixed with !",
      })
      .optional()
      .openapi({
        description: "Only ads active on the portal; `!` inverts; `meta` (internal clients) means any portal",
      }),
    searchattributes: z
      .array(SearchAttribute)
      .max(10)
      .optional()
      .openapi({ description: "searchattributes[<n>][key]=… ; categoryId required" }),
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

// ---- responses ----

const PublishStatus = z
  .object({
    pending: z.boolean(),
    pendingDate: z.string(),
    processing: z.boolean(),
    processingDate: z.string(),
    error: z.boolean(),
    active: z.boolean(),
    online: z.boolean(),
    startDate: z.string(),
    closeDate: z.string(),
    remoteAdId: z.number().int(),
    errorReason: z
      .string()
      .nullable()
      .openapi({ description: "Why the last job failed (the portal's reason or ours); null when it did not" }),
    queueItemId: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The latest job of this publication (GET /jobs/<queueItemId>); null when none" }),
    clientResult: z.boolean().optional().openapi({ description: "portal_a and portal_b only" }),
    queueResult: z.boolean().optional().openapi({ description: "portal_a and portal_b only" }),
  })
  .openapi("PublishStatus");

export const PortalStatus = z
  .object({
    portal: PublishTargetEnum,
    publish: PublishStatus,
    features: z.union([z.literal(false), z.array(z.record(z.string(), z.unknown()))]),
  })
  .openapi("PortalStatus");

const ActionPrice = z.object({
  action: z.string(),
  priceInternal: z.number().int(),
  priceExternal: z.number().int(),
  priceTotal: z.number().int(),
  priceNative: z.number().int(),
});

export const AdSetting = z
  .object({
    portal: MarketplaceEnum,
    showcontact: z.boolean(),
    autoreplace: z.boolean(),
    video: z.string().nullable(),
  })
  .openapi("AdSetting");

export const AdSettings = z.object({ adId: z.number().int(), settings: z.array(AdSetting) }).openapi("AdSettings");
export const AdSettingsInput = z.object({ adId: id(), settings: adSettingsList.min(1) }).openapi("AdSettingsInput");

const simpleAdShape = {
  adId: z.number().int(),
  created: z.string(),
  updated: z.string(),
  userId: z.number().int(),
  contactId: z.number().int().nullable(),
  folderId: z.number().int().nullable(),
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
    model: z.string(),
    price: z.number().int().nullable(),
    minimumBid: z.number().int().nullable(),
    shippingCosts: z.number().int().nullable(),
    retailPrice: z.number().int().nullable(),
  }),
  prices: z.object({ portal_a: z.array(ActionPrice), portal_b: z.array(ActionPrice) }),
  images: z.union([z.literal(false), z.array(z.record(z.string(), z.unknown()))]),
  portals: z.array(PortalStatus),
  misc: z.object({ licensePlate: z.string().nullable() }),
  manufacturerId: z.number().int().nullable(),
};

export const SimpleAd = z.object(simpleAdShape).openapi("SimpleAd");

export const Ad = z
  .object({
    ...simpleAdShape,
    description: z.string(),
    attributes: z.array(
      z.object({
        portal: z.string(),
        locale: z.string(),
        attributes: z.array(z.object({ key: z.string(), value: z.union([z.string(), z.number()]), label: z.string() })),
      }),
    ),
    settings: z.array(AdSetting),
    contact: z.union([z.literal(false), z.record(z.string(), z.unknown())]),
    provider: z.record(z.string(), z.string()).nullable(),
  })
  .openapi("Ad");

/** POST /ads/: every field of the answer is taken too, read-only ones ignored (a read ad can be copied). */
export const CreateAd = takingAnswer(
  z.object({
    userId: id(),
    externalAdId: z.number().int().optional().openapi({ description: "Required for partner clients" }),
    categoryId: id(),
    ...adFields,
    attributes: adFields.attributes.default([]),
  }),
  Ad,
).openapi("CreateAd");

/** PUT /ads/: the ad as GET answers it is taken back whole; the fields fixed after creation must not change. */
export const UpdateAd = takingAnswer(
  z.object({
    adId: id(),
    userId: fixed(id().optional()),
    externalAdId: fixed(z.number().int().nullable().optional()),
    categoryId: fixed(id().optional()),
    ...adFields,
    title: adFields.title.optional(),
    description: adFields.description.optional(),
    attributes: adFields.attributes.optional(),
    price: adFields.price.optional(),
  }),
  Ad,
).openapi("UpdateAd");

export type CreateAdInput = z.infer<typeof CreateAd>;
export type UpdateAdInput = z.infer<typeof UpdateAd>;
