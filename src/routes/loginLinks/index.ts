import { ok } from "../../lib/envelope";
import {
  GenerateLoginLink,
  generateLoginLink,
  LoginLink,
  ValidatedLogin,
  ValidateLoginLink,
  validateLoginLink,
} from "../../services/accounts";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Login link"];

export const loginLinksRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/auth/link/generate",
      tags,
      summary: "A one-time login link valid for 10 minutes; earlier links are revoked",
      request: { body: jsonBody(GenerateLoginLink) },
      response: envelope(LoginLink),
    }),
    async (c) => {
      return c.json(
        ok(
          await generateLoginLink(serviceContext(c), {
            ...c.req.valid("json"),
            // Without a configured website, links follow the request's origin (local development).
            websiteUrl: c.env.WEBSITE_URL || new URL("/login/", c.req.url).toString(),
          }),
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
      request: { body: jsonBody(ValidateLoginLink) },
      response: envelope(ValidatedLogin),
    }),
    async (c) => {
      return c.json(ok(await validateLoginLink(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
