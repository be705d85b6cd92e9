import { z } from "@hono/zod-openapi";
import { id, rowId, upTo } from "../../../lib/fields";
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

/** Activation and login tokens as answered. */
export const ActivationToken = z
  .object({ userId: rowId(), activationtoken: z.string(), validUntil: z.string() })
  .openapi("ActivationToken");

export const LoginLink = z
  .object({ userId: rowId(), accesstoken: z.string(), validUntil: z.string(), url: z.string() })
  .openapi("LoginLink");

export const ValidatedLogin = z.object({ user: User, settings: UserSettings }).openapi("ValidatedLogin");
