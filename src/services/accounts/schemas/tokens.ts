import { z } from "@hono/zod-openapi";
import { documentedSchemas } from "../../../lib/documented";
import { id, upTo } from "../../../lib/fields";
import { UserSettings } from "./settings";
import { User } from "./users";

export const Activate = z.object({ userId: id(), activationtoken: z.string().min(1).max(200) }).openapi("Activate");
export const GenerateActivation = z.object({ userId: id() }).openapi("GenerateActivation");

export const GenerateLoginLink = z
  .object({ userId: id(), ip: upTo(39).optional().openapi({ description: "End-user IP, for the log" }) })
  .openapi("GenerateLoginLink");
export const ValidateLoginLink = z
  .object({ userId: id(), accesstoken: z.string().min(1).max(200) })
  .openapi("ValidateLoginLink");

/** Activation and login tokens as answered (for the document only: see `documentedSchemas`). */
function tokenResponses() {
  const ActivationToken = z
    .object({ userId: z.number().int(), activationtoken: z.string(), validUntil: z.string() })
    .openapi("ActivationToken");

  const LoginLink = z
    .object({ userId: z.number().int(), accesstoken: z.string(), validUntil: z.string(), url: z.string() })
    .openapi("LoginLink");

  const ValidatedLogin = z.object({ user: User, settings: UserSettings }).openapi("ValidatedLogin");
  return { ActivationToken, LoginLink, ValidatedLogin };
}

export const { ActivationToken, LoginLink, ValidatedLogin } = documentedSchemas(
  globalThis.OPENAPI_DOCUMENTED === false ? undefined : tokenResponses(),
);
