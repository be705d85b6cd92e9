import type { Db } from "../../db/client";
import { type UserTokens, userTokens } from "../../durable/UserTokens";
import { ApiError } from "../../lib/errors";
import { formatDateTime } from "../../lib/time";
import { requireUser, type Scope } from "../shared/access";
import { getSettings, type SettingsView, setAccountStatus } from "./settings";
import { getUser, type UserView } from "./users";

export const ACTIVATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const LOGIN_LINK_TTL_MS = 10 * 60 * 1000;
export const ACTIVATION_GENERATION_LIMIT = { max: 5, windowMs: 60 * 60 * 1000 };

export const ACTIVATION_LIMIT_MESSAGE = "maximum number of requests has exceeded. please try again later...";
export const INVALID_ACTIVATION_MESSAGE = "invalid activationtoken or token expired";

export type TokensNamespace = DurableObjectNamespace<UserTokens>;

export interface ActivationView {
  userId: number;
  activationtoken: string;
  validUntil: string;
}

/** A new activation token; earlier ones stop working. `limited` applies the 5-per-hour cap of generate. */
export async function issueActivation(
  ns: TokensNamespace,
  userId: number,
  now: number,
  limited: boolean,
): Promise<ActivationView> {
  const result = await userTokens(ns, userId).issue(
    "activation",
    ACTIVATION_TTL_MS,
    now,
    limited ? ACTIVATION_GENERATION_LIMIT : undefined,
  );
  if (!result.issued) throw new ApiError(429, [ACTIVATION_LIMIT_MESSAGE], [], { "Retry-After": "3600" });
  return { userId, activationtoken: result.token, validUntil: formatDateTime(new Date(result.expiresAt)) };
}

export async function generateActivation(
  db: Db,
  ns: TokensNamespace,
  scope: Scope,
  userId: number,
  now = Date.now(),
): Promise<ActivationView> {
  await requireUser(db, scope, userId);
  return issueActivation(ns, userId, now, true);
}

/** A valid token activates the account (settings status `active`); the token is then used up. */
export async function activate(
  db: Db,
  ns: TokensNamespace,
  scope: Scope,
  input: { userId: number; activationtoken: string },
  now = Date.now(),
): Promise<void> {
  await requireUser(db, scope, input.userId);
  const result = await userTokens(ns, input.userId).redeem("activation", input.activationtoken, now);
  if (!result.ok) throw new ApiError(400, [INVALID_ACTIVATION_MESSAGE]);
  await setAccountStatus(db, input.userId, "active");
}

export interface LoginLinkView {
  userId: number;
  accesstoken: string;
  validUntil: string;
  url: string;
}

export async function generateLoginLink(
  db: Db,
  ns: TokensNamespace,
  scope: Scope,
  input: { userId: number; ip?: string | undefined },
  websiteUrl: string,
  now = Date.now(),
): Promise<LoginLinkView> {
  await requireUser(db, scope, input.userId);
  const result = await userTokens(ns, input.userId).issue("login", LOGIN_LINK_TTL_MS, now);
  if (!result.issued) throw new Error("login links have no generation limit");
  console.log(JSON.stringify({ level: "info", msg: "login link issued", userId: input.userId, ip: input.ip ?? null }));
  return {
    userId: input.userId,
    accesstoken: result.token,
    validUntil: formatDateTime(new Date(result.expiresAt)),
    url: `${websiteUrl}${encodeURIComponent(result.token)}`,
  };
}

const LINK_FAILURES = {
  invalid: "accesstoken is invalid",
  revoked: "accesstoken has been revoked",
  used: "accesstoken has been revoked",
  expired: "accesstoken has expired",
} as const;

/** A link works once: the first valid use answers the user and settings, every later one is refused. */
export async function validateLoginLink(
  db: Db,
  ns: TokensNamespace,
  scope: Scope,
  input: { userId: number; accesstoken: string },
  now = Date.now(),
): Promise<{ user: UserView; settings: SettingsView }> {
  await requireUser(db, scope, input.userId);
  const result = await userTokens(ns, input.userId).redeem("login", input.accesstoken, now);
  if (!result.ok) throw new ApiError(400, [LINK_FAILURES[result.reason]], []);
  const [user, settings] = await Promise.all([getUser(db, scope, input.userId), getSettings(db, scope, input.userId)]);
  return { user, settings };
}
