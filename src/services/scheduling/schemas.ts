import { z } from "@hono/zod-openapi";
import { WEEKDAYS } from "../../db/schema";
import { fixed, id, rowId, takingResponse } from "../../lib/fields";
import { MarketplaceEnum } from "../../lib/vocabulary";
import { FEATURE_NAMES } from "../catalogue";

/** The shapes of scheduled tasks (bump-ups and features at set times): validation, types and the document. */

const time = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "must be a time hh:mm (00:00-23:59)" });
const dayOfWeek = z
  .array(z.enum(WEEKDAYS))
  .max(7)
  .refine((days) => new Set(days).size === days.length, { error: "each day may appear once" })
  .openapi({ uniqueItems: true })
  .nullable()
  .openapi({ description: "monday..sunday, each at most once; omitted or empty: every day" });
export const TaskFeature = z
  .enum(["upcall", ...FEATURE_NAMES])
  .openapi({ description: "Default upcall (= omhoogplaatsen)" });
const adIds = z
  .array(id())
  .max(1000)
  .openapi({ description: "Empty or omitted: every active ad of the user published on the portal" });

export const Task = z
  .object({
    taskId: rowId(),
    userId: rowId(),
    portal: MarketplaceEnum,
    adId: z.array(rowId()),
    time: z.string(),
    dayOfWeek: z.array(z.enum(WEEKDAYS)),
    feature: TaskFeature,
    enabled: z.boolean(),
    runs: z
      .array(
        z.object({
          due: z.string(),
          ads: z.number().int(),
          queued: z.number().int(),
          skipped: z.array(z.object({ adId: rowId(), reason: z.string() })),
          cost: z.number().int(),
        }),
      )
      .optional()
      .openapi({ description: "With a taskId: the 20 latest runs" }),
  })
  .openapi("Task");

/** POST and PUT /tasks/ take a task as answers show it too (`runs` ignored; a new task gets its own id). */
export const CreateTask = takingResponse(
  z.object({
    userId: id(),
    portal: MarketplaceEnum,
    time,
    dayOfWeek: dayOfWeek.optional(),
    adId: adIds.optional(),
    feature: TaskFeature.optional(),
    enabled: z.boolean(),
  }),
  Task,
).openapi("CreateTask");
export const UpdateTask = takingResponse(
  z.object({
    taskId: id(),
    userId: id(),
    portal: fixed(MarketplaceEnum.optional()),
    time: time.optional(),
    dayOfWeek: dayOfWeek.optional(),
    adId: adIds.optional(),
    feature: TaskFeature.optional(),
    enabled: z.boolean().optional(),
  }),
  Task,
).openapi("UpdateTask");
export const DeleteTask = z.object({ taskId: id(), userId: id(), portal: MarketplaceEnum }).openapi("DeleteTask");
