import { z } from "@hono/zod-openapi";
import { openEnum, pagingQuery, queryId, rowId } from "../../../lib/fields";
import { JOB_KIND_NAMES, JobKindEnum, MARKETPLACES, PublishTargetEnum } from "../../../lib/vocabulary";

const JOB_STATES = ["pending", "processing", "done", "error", "cancelled"] as const;

export const JobsQuery = pagingQuery(500).extend({
  userId: queryId().optional(),
  adId: queryId().optional(),
  portal: PublishTargetEnum.optional(),
  state: z.enum(JOB_STATES).optional(),
  kind: JobKindEnum.optional(),
});

/** A job's response shape. */
export const Job = z
  .object({
    queueItemId: rowId(),
    userId: rowId(),
    adId: rowId(),
    portal: PublishTargetEnum,
    kind: openEnum(JOB_KIND_NAMES, "placement (a new listing), update, unpublish or feature."),
    feature: z.string().nullable(),
    state: openEnum(JOB_STATES, "Where the job stands."),
    attempts: z.number().int().openapi({ description: "Times the job was started" }),
    lastError: z.string().nullable().openapi({ description: "The reason of a failure, or the error before a retry" }),
    lastErrorField: z
      .string()
      .nullable()
      .openapi({
        // The example job failed on a 503: no one field.
        example: null,
        description: `The field \`lastError\` is about, as the path a client writes (\`attributes.${MARKETPLACES[0]}.fuel\`, \`price.model\`), when a marketplace refused one field; null otherwise`,
      }),
    cost: z.number().int().openapi({ description: "Cents charged when it was queued" }),
    refunded: z.boolean(),
    retryOf: z.number().int().nullable().openapi({ description: "The failed job this one retries" }),
    remoteAdId: z.number().int().nullable().openapi({
      description: "The listing the job made or acted on, once it succeeded; kept after the ad is deleted",
    }),
    retryable: z.boolean().openapi({ description: "Whether it can be retried: the newest failed job of its listing" }),
    notRetryableReason: z.string().nullable().openapi({ description: "Why not (null when it can)" }),
    waitingSince: z.string().nullable().openapi({
      example: null,
      description:
        "Since when the job waits for a connection to ask its marketplace through (it may be there already); null when not waiting. It waits at most 24 hours, then is refunded and recorded (`job.unresolved`)",
    }),
    created: z.string(),
    updated: z.string(),
  })
  .openapi("Job");
