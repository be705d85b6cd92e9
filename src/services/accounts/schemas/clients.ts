import { z } from "@hono/zod-openapi";

/** The calling API client as GET /client/ shows it: who it is and its rate limit. */
export const Client = z
  .object({
    clientId: z.number().int(),
    name: z.string(),
    internal: z.boolean(),
    partner: z.boolean(),
    rate: z.number().openapi({ description: "requests per second" }),
    burst: z.number().int(),
  })
  .openapi("Client");
