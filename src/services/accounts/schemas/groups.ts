import { z } from "@hono/zod-openapi";
import type { MoveState } from "../../../db/moves";

/** POST /clientgroups/<groupId>/move: the shard to move the group to. */
export const MoveGroup = z
  .object({ shard: z.number().int().positive().openapi({ description: "The shard to move the group to" }) })
  .strict()
  .openapi("MoveGroup", { example: { shard: 2 } });

/** Where a group move stands (src/db/moves/), in figures. */
export const GroupMove = z
  .object({
    group: z.number().int(),
    state: z.enum(["moving", "moved"]).openapi({
      description:
        "`moving`: under way (the cron runs it on each minute, as does this call again); `moved`: the group is on its new shard, and `/confirm` drops what the old one holds",
    }),
    from: z.number().int().openapi({
      description: "The shard the group leaves (it keeps the rows, refusing writes, until the move is confirmed)",
    }),
    to: z.number().int(),
    copied: z.number().int().openapi({ description: "Rows copied before the catch-up" }),
    copiedPerTable: z.record(z.string(), z.number().int()),
    copyMs: z.number().int(),
    caughtUp: z.number().int().openapi({ description: "Changed rows copied again while the clients worked" }),
    rounds: z.number().int(),
    pauseMs: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "How long the group's writes were refused (503 group_moving); null while moving" }),
    eventsFrom: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The group's first event id on its new shard; null while moving" }),
    blocker: z.string().nullable().openapi({
      example: null,
      description:
        "Why the last runner of the move failed (it is tried again at the next call or cron run); null when nothing stops it",
    }),
  })
  .openapi("GroupMove") satisfies z.ZodType<MoveState>;

/** DELETE /clientgroups/<groupId>/move: what the shard the group was moving to dropped. */
export const AbandonedMove = z
  .object({
    groupId: z.number().int(),
    shard: z.number().int().openapi({ description: "The shard the group stays on" }),
    dropped: z
      .number()
      .int()
      .openapi({ description: "Rows the move had copied, dropped from the shard it was going to" }),
  })
  .openapi("AbandonedMove");

/** POST /clientgroups/<groupId>/move/confirm: the rows each old shard dropped. */
export const ConfirmedMove = z
  .object({
    groupId: z.number().int(),
    deleted: z.record(z.string(), z.number().int()).openapi({ description: "Rows deleted, per old shard" }),
  })
  .openapi("ConfirmedMove");
