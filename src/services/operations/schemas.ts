import { z } from "@hono/zod-openapi";

/** The health check's response shape. */
const DependencyCheck = z
  .object({ ok: z.boolean(), latencyMs: z.number().int(), error: z.string().optional() })
  .openapi("DependencyCheck");

export const Health = z
  .object({
    status: z.enum(["ok", "unavailable"]),
    environment: z.string(),
    time: z.string(),
    version: z.string().optional().openapi({ description: "deep=1: the deployed commit" }),
    migration: z
      .string()
      .nullable()
      .optional()
      .openapi({ description: "deep=1: the last D1 migration applied to every shard (the least advanced shard's)" }),
    tokensToReseal: z
      .number()
      .int()
      .nullable()
      .optional()
      .openapi({ description: "deep=1: connections whose tokens are still sealed with a previous key, on all shards" }),
    idSpace: z
      .record(z.string(), z.number())
      .nullable()
      .optional()
      .openapi({
        description:
          "deep=1: per table whose ids come from client groups' blocks, the share of its 32-bit id space leased (0 to 1)",
        example: { ads: 0.0004, users: 0.0001 },
      }),
    shards: z
      .array(
        DependencyCheck.extend({
          shard: z.number().int().openapi({ description: "1 is the DB binding, n is DB_n" }),
          migration: z.string().nullable().openapi({ description: "the last migration applied to this shard" }),
          tokensToReseal: z.number().int().nullable(),
          sizeBytes: z.number().int().nullable().openapi({ description: "the shard's database size" }),
        }).openapi("ShardHealth"),
      )
      .optional()
      .openapi({ description: "deep=1: each shard (D1 database) of the client groups' data" }),
    checks: z
      .object({
        d1: DependencyCheck.openapi({ description: "the directory and every shard" }),
        directory: DependencyCheck.optional(),
        r2: DependencyCheck,
        queue: DependencyCheck,
        rateLimiter: DependencyCheck,
      })
      .optional()
      .openapi({ description: "deep=1: each dependency with its latency" }),
  })
  .openapi("Health");
