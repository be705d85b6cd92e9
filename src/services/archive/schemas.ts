import { z } from "@hono/zod-openapi";
import { pagingQuery, queryId } from "../../lib/fields";

/** What the archive holds: each kind is read by its own route, `GET /archive/<kind>`. */
export const ARCHIVE_KINDS = ["jobs", "images", "ledger", "events", "deliveries"] as const;

export const ArchiveQuery = pagingQuery(1000, 100).extend({
  month: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, { error: "must be a month as YYYY-MM" })
    .openapi({ description: "The month the rows were written in (UTC), as YYYY-MM", example: "2025-01" }),
  userId: queryId()
    .optional()
    .openapi({ description: "That user's rows (jobs, images, ledger, events); without it, the calling client's own" }),
});

/** `GET /archive/deliveries`: the deliveries of a client's webhooks, so no user to name. */
export const DeliveriesArchiveQuery = ArchiveQuery.omit({ userId: true });
