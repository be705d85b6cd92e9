import { z } from "@hono/zod-openapi";
import attributeValues from "../../../db/attributeValues.json";
import { id, onePer, queryBool, queryId, rowId } from "../../../lib/fields";
import { AdTypeEnum } from "../../../lib/vocabulary";

/** The allowed values of `condition` and `delivery`, shared with the catalogue (scripts/catalogue.mjs). */
const [firstCondition, ...otherConditions] = attributeValues.condition;
const [firstDelivery, ...otherDeliveries] = attributeValues.delivery;
export const CONDITIONS = [firstCondition as string, ...otherConditions] as const;
export const DELIVERIES = [firstDelivery as string, ...otherDeliveries] as const;
export const BUDGET_NOTIFY_LIMITS = [0, 500, 1000, 2500, 5000, 10000, 15000, 20000] as const;

const AttributeDefault = z.discriminatedUnion("key", [
  z.strictObject({ key: z.literal("condition"), value: z.enum(CONDITIONS) }),
  z.strictObject({ key: z.literal("delivery"), value: z.enum(DELIVERIES) }),
]);

const attributes = onePer(
  z.array(AttributeDefault).max(2),
  "key",
  "Defaults for new ads: keys `condition` and `delivery`",
);

const budgetNotifyLimit = z
  .number()
  .int()
  .refine((v) => (BUDGET_NOTIFY_LIMITS as readonly number[]).includes(v), {
    error: `must be one of: ${BUDGET_NOTIFY_LIMITS.join(", ")}`,
  })
  .openapi({ description: "Cents; 0 means no notification", enum: [...BUDGET_NOTIFY_LIMITS] });

export const SettingsInput = z
  .object({
    userId: id(),
    mainUserId: id().nullable().optional().openapi({ description: "Internal clients only" }),
    walletUserId: id().nullable().optional().openapi({ description: "User whose wallet pays; internal clients only" }),
    maxContacts: z.number().int().min(0).max(1000).optional().openapi({ description: "Internal clients only" }),
    maxImages: z.number().int().min(1).max(100).optional().openapi({ description: "Internal clients only" }),
    status: z.enum(["active", "locked"]).optional(),
    type: AdTypeEnum.optional(),
    allowbids: z.boolean().optional(),
    showcontact: z.boolean().optional(),
    itemsPerPage: z.number().int().min(1).max(100).optional(),
    groupId: id().nullable().optional(),
    categoryId: id().nullable().optional(),
    attributes: attributes.optional(),
    budgetNotifyLimit: budgetNotifyLimit.optional(),
  })
  .openapi("UserSettingsInput");

export const SettingsPatch = z
  .strictObject(
    {
      userId: id(),
      showcontact: z.boolean().optional(),
      attributes: attributes.optional(),
      budgetNotifyLimit: budgetNotifyLimit.optional(),
    },
    { error: "cannot be patched; patchable fields are showcontact, attributes, budgetNotifyLimit" },
  )
  .openapi("UserSettingsPatch");

export type SettingsInput = z.infer<typeof SettingsInput>;
export type SettingsPatch = z.infer<typeof SettingsPatch>;

export const SettingsQuery = z.object({ userId: queryId(), useCache: queryBool().optional() });

/** A user's settings as answered. */
export const UserSettings = z
  .object({
    userId: rowId(),
    mainUserId: rowId().nullable(),
    walletUserId: rowId().nullable(),
    maxContacts: z.number().int(),
    status: z.enum(["active", "locked"]),
    type: AdTypeEnum,
    allowbids: z.boolean(),
    showcontact: z.boolean(),
    itemsPerPage: z.number().int(),
    maxImages: z.number().int(),
    groupId: z.number().int().nullable(),
    categoryId: z.number().int().nullable(),
    attributes: z.array(AttributeDefault),
    budgetNotifyLimit,
  })
  .openapi("UserSettings");
