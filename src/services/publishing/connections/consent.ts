import { and, eq, ne, sql } from "drizzle-orm";
import * as oauth from "oauth4webapi";
import type { Db } from "../../../db/client";
import { returnOriginsOf } from "../../../db/directory";
import { adPublications, ads, portalConnections, publishJobs } from "../../../db/schema";
import { onShard, shardOfNamedId } from "../../../db/shards";
import type { Env } from "../../../env";
import { randomToken } from "../../../lib/crypto";
import { DomainError } from "../../../lib/errors";
import { open, seal } from "../../../lib/secretBox";
import { nowIso } from "../../../lib/time";
import type { Marketplace } from "../../../lib/vocabulary";
import { callbackUrl } from "../../../portals/config";
import { PortalError, PortalGateway, type TokenSet } from "../../../portals/gateway";
import { clientIdOf, requireUser } from "../../shared/access";
import { type JobContext, jobContext, type ServiceContext } from "../../shared/context";
import { connectionView, loadConnection, noAuthorization, revokeAtPortal } from "./connection";
import { storeTokens } from "./tokens";

const STATE_TTL_MS = 10 * 60 * 1000;

/** POST: starts the authorization; every earlier token of the user on the portal is revoked. */
export async function startConnection(
  ctx: ServiceContext,
  input: { userId: number; portal: Marketplace; publicOrigin: string; returnUrl?: string | undefined },
) {
  const { db, env, caller } = ctx;
  await requireUser(db, caller, input.userId);
  if (input.returnUrl !== undefined) await requireReturnOrigin(ctx, input.returnUrl);
  // The contract revokes the previous access token; the refresh token stays until another connection
  // is made, so an abandoned or refused consent leaves the user connected (its jobs renew the access).
  await revokeAtPortal(env, input.portal, (await loadConnection(db, input.userId, input.portal))?.accessToken);
  // The state leads with the user, so the callback finds the authorization by its connection's key.
  const state = `${input.userId}.${randomToken(16)}`;
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const values = {
    accessToken: null,
    accessTokenExpire: null,
    oauthState: state,
    oauthStateExpire: new Date(Date.now() + STATE_TTL_MS).toISOString(),
    oauthCodeVerifier: await seal(codeVerifier, env),
    oauthReturnUrl: input.returnUrl ?? null,
    updatedAt: nowIso(),
  };
  await db
    .insert(portalConnections)
    .values({ userId: input.userId, portal: input.portal, ...values })
    .onConflictDoUpdate({ target: [portalConnections.userId, portalConnections.portal], set: values });
  const gateway = new PortalGateway(env, input.portal);
  return {
    redirect: gateway.authorizeUrl(input.publicOrigin, {
      state,
      redirectUri: callbackUrl(input.publicOrigin, input.portal),
      codeChallenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    }),
  };
}

/** Refuses a `returnUrl` whose origin the calling client has not registered: no open redirect. */
async function requireReturnOrigin(ctx: ServiceContext, returnUrl: string) {
  const origins = await returnOriginsOf(ctx.env.DIRECTORY, clientIdOf(ctx.caller));
  if (!origins.includes(new URL(returnUrl).origin))
    throw DomainError.of(
      "validation_failed",
      "returnUrl: its origin is not one the client registered (PATCH /client/ returnOrigins)",
    );
}

/** PUT: exchanges the authorization code for tokens; a wrong state or code is refused. */
export async function completeConnection(
  ctx: ServiceContext,
  input: { userId: number; portal: Marketplace; code: string; state: string; publicOrigin: string },
) {
  await requireUser(ctx.db, ctx.caller, input.userId);
  return exchangeCode(ctx, input);
}

/**
 * The authorization's code exchanged for tokens and stored (after PUT /oauth/…, or at the callback of a
 * consent that returns the user): refused when no authorization is in progress or its state differs.
 */
async function exchangeCode(
  ctx: Pick<JobContext, "db" | "env">,
  input: { userId: number; portal: Marketplace; code: string; state: string; publicOrigin: string },
) {
  const { db, env } = ctx;
  const current = await loadConnection(db, input.userId, input.portal);
  if (
    !current?.oauthState ||
    !current.oauthCodeVerifier ||
    !current.oauthStateExpire ||
    current.oauthStateExpire < nowIso()
  ) {
    throw DomainError.of(
      "oauth_not_started",
      "portal: no authorization in progress; start one with POST /oauth/<userId>/<portal>/",
    );
  }
  if (input.state !== current.oauthState)
    throw DomainError.of("oauth_state_mismatch", "state: does not match the authorization");
  try {
    const tokens = await new PortalGateway(env, input.portal).exchangeCode({
      code: input.code,
      state: input.state,
      expectedState: current.oauthState,
      redirectUri: callbackUrl(input.publicOrigin, input.portal),
      codeVerifier: await open(current.oauthCodeVerifier, env),
    });
    await refuseAnotherAccount(db, env, {
      userId: input.userId,
      portal: input.portal,
      tokens,
      previousAccount: current.externalUserId,
    });
    // The previous connection's refresh token ends with it.
    await revokeAtPortal(env, input.portal, current.refreshToken);
    const stored = await storeTokens({ db, env }, { ...input, completing: true, tokens });
    return connectionView(input.userId, input.portal, stored);
  } catch (error) {
    if (error instanceof PortalError && error.kind !== "transient")
      throw DomainError.of("oauth_code_refused", "code: refused by the portal");
    throw error;
  }
}

/**
 * The callback of a consent that returns the user (`returnUrl`): the authorization its `state` names is
 * finished here, its code exchanged inside the API, and the user is sent to the return URL with the
 * outcome. Undefined when no such authorization is in progress (the callback then shows its page).
 */
export async function finishConsentAtCallback(
  env: Env,
  input: {
    portal: Marketplace;
    state: string;
    code: string;
    error: string;
    publicOrigin: string;
    requestId: string;
  },
): Promise<URL | undefined> {
  const userId = Number(input.state.split(".")[0]);
  if (!Number.isSafeInteger(userId) || userId <= 0) return undefined;
  // The callback carries no key: the state's user names the shard its authorization is on.
  const shard = await shardOfNamedId(env, { field: "state", kind: "users", id: userId });
  if (shard === undefined) return undefined;
  const ctx = jobContext(onShard(env, shard, "the user the consent's state names"), input.requestId);
  const waiting = await ctx.db
    .select({ userId: portalConnections.userId, returnUrl: portalConnections.oauthReturnUrl })
    .from(portalConnections)
    .where(
      and(
        eq(portalConnections.userId, userId),
        eq(portalConnections.portal, input.portal),
        eq(portalConnections.oauthState, input.state),
      ),
    )
    .get();
  if (!waiting?.returnUrl) return undefined;
  const back = new URL(waiting.returnUrl);
  back.searchParams.set("portal", input.portal);
  back.searchParams.set("userId", String(waiting.userId));
  const outcome = input.error
    ? "access_denied"
    : await exchangeCode(ctx, { ...input, userId: waiting.userId }).then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof DomainError) return error.details[0]?.code ?? "oauth_code_refused";
          // The marketplace could not be reached: the user comes back told so (RFC 6749's word for it).
          if (error instanceof PortalError) return "temporarily_unavailable";
          throw error;
        },
      );
  if (outcome) {
    // The authorization ends with its outcome: a refused consent can be started again.
    await ctx.db
      .update(portalConnections)
      .set(noAuthorization)
      .where(and(eq(portalConnections.userId, waiting.userId), eq(portalConnections.portal, input.portal)));
    back.searchParams.set("status", "error");
    back.searchParams.set("error", outcome);
  } else back.searchParams.set("status", "connected");
  return back;
}

/**
 * Listings stay bound to the account that holds them. The connection to another marketplace account than
 * the one just authorized is refused (the new tokens revoked) while any of the user's listings on the
 * portal is live at another account, or while a job of the user there has started and not ended (it may
 * be at the previous account): nothing is orphaned there. The user unpublishes them first (or waits for
 * the jobs), or connects that account again. A job waiting for a connection does not hold the switch:
 * it stays apart from the new account, settled unresolved at its next run (jobs/run.ts `unresolvedWait`).
 */
async function refuseAnotherAccount(
  db: Db,
  env: Env,
  input: { userId: number; portal: Marketplace; tokens: TokenSet; previousAccount: number | null },
): Promise<void> {
  const { userId, portal, tokens, previousAccount } = input;
  const account = tokens.account.id;
  const switching = previousAccount !== null && previousAccount !== account;
  // The account holding a live listing of the user elsewhere, and the user's started jobs still open
  // there (counted only when the account changes).
  const [live] = await db
    .select({ account: adPublications.remoteAccountId })
    .from(adPublications)
    .innerJoin(ads, eq(ads.id, adPublications.adId))
    .where(
      and(
        eq(ads.userId, userId),
        eq(adPublications.portal, portal),
        eq(adPublications.active, true),
        ne(adPublications.remoteAccountId, account),
      ),
    )
    .limit(1);
  const [running] = switching
    ? await db
        .select({ n: sql<number>`count(*)` })
        .from(publishJobs)
        .where(
          sql`user_id = ${userId} AND portal = ${portal} AND status IN ('pending', 'processing') AND attempts > 0 AND waiting_since IS NULL`,
        )
    : [];
  const started = running?.n ?? 0;
  if (!live && started === 0) return;
  await new PortalGateway(env, portal).revoke(tokens.refreshToken).catch(() => undefined);
  const held = live ? "listings are live" : `${started} jobs are running`;
  throw DomainError.of(
    "portal_account_has_listings",
    `code: ${held} at ${portal} account ${live?.account ?? previousAccount}; end them first, or connect that account`,
  );
}
