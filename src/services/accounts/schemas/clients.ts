import { z } from "@hono/zod-openapi";
import { PORT, rowId, takingResponse } from "../../../lib/fields";

/** Hosts a consent may return to over plain http: a developer's own machine. */
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The longest origin there is: `https://`, a host name of 253 characters (DNS's most), `:65535`. */
const MAX_ORIGIN_LENGTH = "https://".length + 253 + ":65535".length;

/**
 * `https://` and a host name whose last label is not a number (that would be an IPv4 address), or a local
 * host; an optional port.
 */
const ORIGIN_SHAPE = new RegExp(
  `^(https://([a-z0-9-]+\\.)*[a-z0-9-]*[a-z][a-z0-9-]*|http://(localhost|127\\.0\\.0\\.1|\\[::1\\]))(:${PORT})?$`,
);

/** An origin the client registers: `https://host[:port]`, or `http://localhost[:port]` for development. */
export const ReturnOrigin = z
  .string()
  .max(MAX_ORIGIN_LENGTH)
  // What an origin looks like, in the document; the check below is the URL parser's (an origin as written
  // is its own origin: lower case, no default port, no path).
  .regex(ORIGIN_SHAPE, { error: "must be an origin: https://host[:port], or http://localhost[:port] (no path)" })
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
    clientId: rowId(),
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
