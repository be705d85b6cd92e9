import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { id, upTo } from "../../lib/fields";
import { generateLoginLink, User, UserSettings, validateLoginLink } from "../../services/accounts";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Login link"];

const GenerateLink = z
  .object({ userId: id(), ip: upTo(39).optional().openapi({ description: "End-user IP, for the log" }) })
  .openapi("GenerateLoginLink");
const ValidateLink = z.object({ userId: id(), accesstoken: z.string().min(1).max(200) }).openapi("ValidateLoginLink");
const LoginLink = z
  .object({ userId: z.number().int(), accesstoken: z.string(), validUntil: z.string(), url: z.string() })
  .openapi("LoginLink");
const ValidatedLogin = z.object({ user: User, settings: UserSettings }).openapi("ValidatedLogin");

export const loginLinksRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/auth/link/generate",
      tags,
      summary: "A one-time login link valid for 10 minutes; earlier links are revoked",
      request: { body: jsonBody(GenerateLink) },
      response: envelope(LoginLink),
    }),
    async (c) => {
      return c.json(
        ok(
          await generateLoginLink(
            serviceContext(c),
            c.req.valid("json"),
            // Without a configured website, links follow the request's origin (local development).
            c.env.WEBSITE_URL || new URL("/login/", c.req.url).toString(),
          ),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/auth/link/validate",
      tags,
      summary: "Use a login link once: answers the user and its settings",
      description:
        "A second use or a revoked link answers 400 `accesstoken has been revoked`, an expired one `accesstoken has expired`, with data `[]`.",
      request: { body: jsonBody(ValidateLink) },
      response: envelope(ValidatedLogin),
    }),
    async (c) => {
      return c.json(ok(await validateLoginLink(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
