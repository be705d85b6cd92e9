import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { Event, EventsQuery, type EventType, readEvents } from "../../services/events";
import { serviceContext } from "../context";
import { apiRoute, createRouter } from "../openapi";

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
