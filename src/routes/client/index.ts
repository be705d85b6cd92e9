import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { taggedRead } from "../../middleware/responseCache";
import { Client, describeClient, UpdateClient, updateClient } from "../../services/accounts";
import { clientRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Client"];

/** The deployment's rate limit, for clients that have none of their own. */
const defaults = (c: Context<AppEnv>) => ({
  defaultRate: Number(c.env.RATE_LIMIT_RPS),
  defaultBurst: Number(c.env.RATE_LIMIT_BURST),
});

export const clientRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/client",
      entityTag: true,
      tags,
      summary: "The calling API client, its rate limit and its return origins",
      response: envelope(Client),
    }),
    async (c) =>
      c.json(
        await taggedRead(c, undefined, clientRevision(c.get("client").id), async () =>
          ok(await describeClient(serviceContext(c), defaults(c))),
        ),
        200,
      ),
  )
  .openapi(
    apiRoute({
      method: "patch",
      path: "/client",
      entityTag: true,
      tags,
      summary: "Register the origins a consent may send your users back to",
      description:
        "`returnOrigins` replaces the list (at most 10): `https://host[:port]`, or `http://localhost[:port]` for development. `POST /oauth/<userId>/<portal>/` accepts a `returnUrl` only on one of them.",
      request: { body: jsonBody(UpdateClient) },
      response: envelope(Client),
    }),
    async (c) => c.json(ok(await updateClient(serviceContext(c), { ...c.req.valid("json"), ...defaults(c) })), 200),
  );
