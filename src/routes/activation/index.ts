import { ok } from "../../lib/envelope";
import { Activate, ActivationToken, activate, GenerateActivation, generateActivation } from "../../services/accounts";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody } from "../openapi";

const tags = ["User activation"];

export const activationRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/user/activate",
      tags,
      summary: "Activate (unlock) a user with its activation token",
      description: "An invalid, revoked, used or expired token answers 400 `invalid activationtoken or token expired`.",
      request: { body: jsonBody(Activate) },
      response: envelope(EmptyData),
    }),
    async (c) => {
      await activate(serviceContext(c), c.req.valid("json"));
      return c.json(ok([]), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/user/activate/generate",
      tags,
      summary: "A new activation token; all earlier ones are revoked (at most 5 per user per hour)",
      request: { body: jsonBody(GenerateActivation) },
      response: envelope(ActivationToken),
    }),
    async (c) => {
      return c.json(ok(await generateActivation(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
