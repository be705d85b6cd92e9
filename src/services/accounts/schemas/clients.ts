import { z } from "@hono/zod-openapi";
import { takingResponse } from "../../../lib/fields";

/** Hosts a consent may return to over plain http: a developer's own machine. */
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The longest origin there is: `https://`, a host name of 253 characters (DNS's most), `:65535`. */
const MAX_ORIGIN_LENGTH = "https://".length + 253 + ":65535".length;

/** An origin the client registers: `https://host[:port]`, or `http://localhost[:port]` for development. */
export const ReturnOrigin = z
  .string()
  .max(MAX_ORIGIN_LENGTH)
  .refine(
    (value) => {
      if (!URL.canParse(value)) return false;
      const url = new URL(value);
      return url.origin === value && (url.protocol === "https:" || LOCAL_HOSTS.has(url.hostname));
    },
    { error: "must be an origin: https://host[:port], or http://localhost[:port] (no path)" },
  )
  .openapi({ example: "https://erp.garagedevries.nl" });

/** The calling API client as GET /client/ shows it: who it is, its rate limit, its return origins. */
export const Client = z
  .object({
    clientId: z.number().int(),
    name: z.string(),
    internal: z.boolean(),
    partner: z.boolean(),
    rate: z.number().openapi({ description: "requests per second" }),
    burst: z.number().int(),
    returnOrigins: z.array(z.string()).openapi({
      example: ["https://erp.garagedevries.nl"],
      description: "Where a consent may send the user back (`returnUrl` of POST /oauth/<userId>/<portal>/)",
    }),
  })
  .openapi("Client");

/** PATCH /client/: what a client sets of itself (the rest of GET /client/'s answer may be sent back). */
export const UpdateClient = takingResponse(z.object({ returnOrigins: z.array(ReturnOrigin).max(10) }), Client).openapi(
  "UpdateClient",
);
