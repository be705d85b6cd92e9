import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { queryInt } from "../../lib/fields";
import { EVENT_TYPES, type EventType, readEvents } from "../../services/events";
import { serviceContext } from "../context";
import { apiRoute, createRouter } from "../openapi";

export const Event = z
  .object({
    eventId: z.number().int().openapi({ description: "Increases; resume after the last one you saw" }),
    type: z.enum(EVENT_TYPES),
    occurredAt: z.string(),
    userId: z.number().int().nullable().openapi({ description: "null for events about the client itself" }),
    adId: z.number().int().nullable(),
    portal: z.string().nullable(),
    data: z.record(z.string(), z.unknown()).openapi({ description: "What happened; per type, see the README" }),
  })
  .openapi("Event");

const eventTypes = z
  .string()
  .transform((value) => value.split(",").map((t) => t.trim()))
  .pipe(z.array(z.enum(EVENT_TYPES)))
  .openapi({ type: "string", description: "One type or several, comma-separated" });

const EventsQuery = z.object({
  after: queryInt(0)
    .optional()
    .openapi({ description: "The cursor: events with a larger id (default 0, from the start); not beyond the latest" }),
  type: eventTypes.optional(),
  userId: queryInt().optional(),
  limit: queryInt(1, 500).optional().openapi({ description: "At most 500; default 100" }),
});

export const eventsRouter = createRouter().openapi(
  apiRoute({
    method: "get",
    path: "/events",
    tags: ["Events"],
    summary: "The event feed: what happened to your users' ads, images, bids, tasks and wallets, oldest first",
    description:
      "Read from `after=0` and ask again with the answered `cursor`: every event arrives once, in order. Events are kept 30 days.",
    request: { query: EventsQuery },
    response: z.object({
      result: z.boolean(),
      errors: z.array(z.string()),
      data: z.array(Event),
      cursor: z.number().int().openapi({ description: "Pass as `after` to read on" }),
    }),
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { events, cursor } = await readEvents(serviceContext(c), {
      after: query.after ?? 0,
      types: query.type as EventType[] | undefined,
      userId: query.userId,
      limit: query.limit ?? 100,
    });
    return c.json({ ...ok(events), cursor }, 200);
  },
);
