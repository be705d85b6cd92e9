import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { id } from "../../lib/fields";
import { activate, generateActivation } from "../../services/accounts";
import { serviceContext } from "../context";
import { apiRoute, createRouter, EmptyData, envelope, jsonBody } from "../openapi";

const tags = ["User activation"];

const Activate = z.object({ userId: id(), activationtoken: z.string().min(1).max(200) }).openapi("Activate");
const GenerateActivation = z.object({ userId: id() }).openapi("GenerateActivation");
const ActivationToken = z
  .object({ userId: z.number().int(), activationtoken: z.string(), validUntil: z.string() })
  .openapi("ActivationToken");

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
      return c.json(ok(await generateActivation(serviceContext(c), c.req.valid("json").userId)), 200);
    },
  );
