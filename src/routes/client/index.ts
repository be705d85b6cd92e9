import { ok } from "../../lib/envelope";
import { Client } from "../../services/accounts";
import { apiRoute, createRouter, envelope } from "../openapi";

const getClient = apiRoute({
  method: "get",
  path: "/client",
  tags: ["Client"],
  summary: "The calling API client and its rate limit",
  response: envelope(Client),
});

export const clientRouter = createRouter().openapi(getClient, (c) => {
  const client = c.get("client");
  return c.json(
    ok({
      clientId: client.id,
      name: client.name,
      internal: client.internal,
      partner: client.partner,
      rate: client.rate ?? Number(c.env.RATE_LIMIT_RPS),
      burst: client.burst ?? Number(c.env.RATE_LIMIT_BURST),
    }),
    200,
  );
});
