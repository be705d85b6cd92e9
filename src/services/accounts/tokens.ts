import { type UserTokens, userTokens } from "../../durable/UserTokens";
import { DomainError, detail } from "../../lib/errors";
import { formatDateTime } from "../../lib/time";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
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
  ctx: ServiceContext,
  { userId, limited }: { userId: number; limited: boolean },
): Promise<ActivationView> {
  const result = await userTokens(ctx.env.USER_TOKENS, userId).issue(
    "activation",
    ACTIVATION_TTL_MS,
    Date.now(),
    limited ? ACTIVATION_GENERATION_LIMIT : undefined,
  );
  if (!result.issued)
    throw new DomainError(detail("activation_limit_reached", ACTIVATION_LIMIT_MESSAGE), { retryAfterSeconds: 3600 });
  return { userId, activationtoken: result.token, validUntil: formatDateTime(new Date(result.expiresAt)) };
}

export async function generateActivation(ctx: ServiceContext, { userId }: { userId: number }): Promise<ActivationView> {
  await requireUser(ctx.db, ctx.caller, userId);
  return issueActivation(ctx, { userId, limited: true });
}

/** A valid token activates the account (settings status `active`); the token is then used up. */
export async function activate(ctx: ServiceContext, input: { userId: number; activationtoken: string }): Promise<void> {
  const { db, caller } = ctx;
  const ns = ctx.env.USER_TOKENS;
  await requireUser(db, caller, input.userId);
  const result = await userTokens(ns, input.userId).redeem("activation", input.activationtoken, Date.now());
  if (!result.ok) throw DomainError.of("invalid_activation_token", INVALID_ACTIVATION_MESSAGE);
  await setAccountStatus(db, input.userId, "active");
}

export interface LoginLinkView {
  userId: number;
  accesstoken: string;
  validUntil: string;
  url: string;
}

/** A one-time login link to `websiteUrl` (the website's login page, the token appended). */
export async function generateLoginLink(
  ctx: ServiceContext,
  input: { userId: number; ip?: string | undefined; websiteUrl: string },
): Promise<LoginLinkView> {
  const { db, caller } = ctx;
  const ns = ctx.env.USER_TOKENS;
  await requireUser(db, caller, input.userId);
  const result = await userTokens(ns, input.userId).issue("login", LOGIN_LINK_TTL_MS, Date.now());
  if (!result.issued) throw new Error("login links have no generation limit");
  console.log(JSON.stringify({ level: "info", msg: "login link issued", userId: input.userId, ip: input.ip ?? null }));
  return {
    userId: input.userId,
    accesstoken: result.token,
    validUntil: formatDateTime(new Date(result.expiresAt)),
    url: `${input.websiteUrl}${encodeURIComponent(result.token)}`,
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
  ctx: ServiceContext,
  input: { userId: number; accesstoken: string },
): Promise<{ user: UserView; settings: SettingsView }> {
  const { db, caller } = ctx;
  const ns = ctx.env.USER_TOKENS;
  await requireUser(db, caller, input.userId);
  const result = await userTokens(ns, input.userId).redeem("login", input.accesstoken, Date.now());
  if (!result.ok) throw DomainError.of("invalid_login_link", LINK_FAILURES[result.reason]);
  const [user, settings] = await Promise.all([getUser(ctx, input.userId), getSettings(ctx, input.userId)]);
  return { user, settings };
}
