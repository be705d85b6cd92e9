import { z } from "@hono/zod-openapi";
import { PRICE_MODELS, REMOVED_PRICE_MODELS } from "../../db/schema";
import { countyField } from "../../lib/dutch";
import { ErrorDetail } from "../../lib/errors";
import { acrossFields, fixed, id, onePer, readOnly, rowId, text, upTo, VIDEO_URL, webUrl } from "../../lib/fields";
import { AdStatusEnum, AdTypeEnum, MARKETPLACES, MarketplaceEnum } from "../../lib/vocabulary";

// What ads are written from: the inputs of the ads commands, and the responses of the commands' own
// batch and settings calls. The read model's shapes (Ad, SimpleAd, the list query) are in adViews.

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
    values: attributeValues.optional().openapi({ description: acrossFields("Required, unless `attributes` is given") }),
    attributes: attributeValues
      .optional()
      .openapi({ description: acrossFields("Not with `values`", "The answers' name for `values`") }),
  })
  .superRefine((set, ctx) => {
    if (set.values === undefined && set.attributes === undefined)
      ctx.addIssue({ code: "custom", path: ["values"], message: "is required" });
    if (set.values !== undefined && set.attributes !== undefined)
      ctx.addIssue({ code: "custom", path: ["attributes"], message: "give values or attributes, not both" });
  })
  .transform(({ attributes, values, ...set }) => ({ ...set, values: values ?? attributes ?? [] }))
  .openapi("AdAttributesInput", {
    example: { portal: MARKETPLACES[0], locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
  });

/**
 * Price object, in the writes' spelling (`retail`) or the responses' (`retailPrice`, `null` for an absent
 * amount); the removed models are refused with a message that names them.
 */
export const PriceInput = z
  .strictObject({
    model: z
      .enum(PRICE_MODELS, {
        error: (issue) =>
          (REMOVED_PRICE_MODELS as readonly unknown[]).includes(issue.input)
            ? `the price model "${issue.input}" has been removed; use one of: ${PRICE_MODELS.join(", ")}`
            : `must be one of: ${PRICE_MODELS.join(", ")}`,
      })
      .openapi({ description: "fixed, bidding, see description, reserved" }),
    price: cents()
      .nullable()
      .optional()
      .openapi({ description: acrossFields("Required for the models fixed and bidding", "Cents") }),
    minimumBid: cents()
      .nullable()
      .optional()
      .openapi({ description: acrossFields("Required for the model bidding", "Cents") }),
    shippingCosts: cents().nullable().optional(),
    retail: cents().nullable().optional().openapi({ description: "Returned as retailPrice" }),
    retailPrice: cents()
      .nullable()
      .optional()
      .openapi({
        description: acrossFields("Equal to `retail` when both are given", "The answers' name for `retail`"),
      }),
  })
  .superRefine((price, ctx) => {
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
export const AdSettingInput = z
  .strictObject({
    portal: MarketplaceEnum,
    showcontact: z.boolean().optional(),
    autoreplace: z
      .boolean()
      .optional()
      .openapi({ description: "Re-publish at the end of the listing period; default false" }),
    video: webUrl(1024, VIDEO_URL).nullable().optional(),
  })
  .openapi("AdSettingInput");

const adSettingsList = onePer(z.array(AdSettingInput).max(MARKETPLACES.length), "portal");

const attributesList = onePer(z.array(AdAttributesInput).max(MARKETPLACES.length), "portal");

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
  .strictObject({
    licensePlate: upTo(8)
      .nullable()
      .optional()
      // The example ad is a scooter (Brommers, not an automotive group): its plate stays unset.
      .openapi({ description: "Automotive categories only (a rule across fields: docs/validation.md)", example: null }),
  })
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
    adId: rowId(),
    result: z.boolean(),
    errors: z.array(z.string()),
    errorDetails: z.array(ErrorDetail).openapi({ description: "The errors with their codes; empty when done" }),
  })
  .openapi("AdBatchItemResult");
export type BatchItemResult = z.infer<typeof BatchItemResult>;

export const AdSetting = z
  .object({
    portal: MarketplaceEnum,
    showcontact: z.boolean(),
    autoreplace: z.boolean(),
    video: z.string().nullable(),
  })
  .openapi("AdSetting");

export const AdSettings = z.object({ adId: rowId(), settings: z.array(AdSetting) }).openapi("AdSettings");
/** POST /adsettings/: each portal given is replaced; none given (as an ad without settings reads) changes nothing. */
export const AdSettingsInput = z.object({ adId: id(), settings: adSettingsList }).openapi("AdSettingsInput");

/** POST /ads/: the fields an ad is created from (adViews' `CreateAd` also takes the read-only ones of the response). */
export const CreateAdFields = z.object({
  userId: id(),
  externalAdId: z
    .number()
    .int()
    .optional()
    .openapi({ description: acrossFields("Required for partner clients") }),
  categoryId: id(),
  ...adFields,
  attributes: adFields.attributes.default([]),
});

/** PUT /ads/: the fields an ad is updated from; the fields fixed after creation must not change. */
export const UpdateAdFields = z.object({
  adId: id(),
  userId: fixed(id().optional()),
  externalAdId: fixed(z.number().int().nullable().optional()),
  // Nullable as reads show it, so a read ad is sent back as it is; a change is refused all the same.
  categoryId: fixed(id().nullable().optional()),
  ...adFields,
  title: adFields.title.optional(),
  description: adFields.description.optional(),
  attributes: adFields.attributes.optional(),
  price: adFields.price.optional(),
});

export type CreateAdInput = z.output<typeof CreateAdFields>;
export type UpdateAdInput = z.output<typeof UpdateAdFields>;
