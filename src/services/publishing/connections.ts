import { and, eq, isNotNull, ne, notLike, or, sql } from "drizzle-orm";
import * as oauth from "oauth4webapi";
import { batchAll, type Db, namedBatch } from "../../db/client";
import { adPublications, ads, apiClients, portalConnections, publishJobs, users } from "../../db/schema";
import { userTokens } from "../../durable/UserTokens";
import type { Env } from "../../env";
import { randomToken } from "../../lib/crypto";
import { DomainError } from "../../lib/errors";
import { currentKeyId, mask, open, seal } from "../../lib/secretBox";
import { formatDateTime, nowIso } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import { callbackUrl } from "../../portals/config";
import { PortalError, PortalGateway, portalErrorOf, type TokenSet } from "../../portals/gateway";
import { eventOf } from "../events/events";
import { clientIdOf, requireUser } from "../shared/access";
import type { JobContext, ServiceContext } from "../shared/context";
import { bumpRevisions, userRevision } from "../shared/revisions";

const STATE_TTL_MS = 10 * 60 * 1000;
export type ConnectionRow = typeof portalConnections.$inferSelect;

/** The spec's portal connection; token fields exist but never show a token. */
export const connectionView = (userId: number, portal: Marketplace, row: ConnectionRow | undefined) => ({
  userId,
  portal,
  status: row?.status ?? false,
  // The account of a connection that is off is only kept to guard its listings (see refuseAnotherAccount).
  externalUserId: row?.status ? (row.externalUserId ?? 0) : 0,
  accessToken: mask(Boolean(row?.accessToken)),
  accessTokenExpire: row?.accessTokenExpire ? formatDateTime(row.accessTokenExpire) : "",
  refreshToken: mask(Boolean(row?.refreshToken)),
  email: row?.email ?? "",
  scope: row?.scope ?? [],
});

/** The user's connection row for a portal (a query, so a job can read it in its claiming batch). */
export const connectionQuery = (db: Db, userId: number, portal: Marketplace) =>
  db
    .select()
    .from(portalConnections)
    .where(and(eq(portalConnections.userId, userId), eq(portalConnections.portal, portal)));

async function loadConnection(db: Db, userId: number, portal: Marketplace) {
  return connectionQuery(db, userId, portal).get();
}

/** Which connection: a user's at one portal. */
interface ConnectionRef {
  userId: number;
  portal: Marketplace;
}

/** A user's connection to a portal (`input`: the user and the portal). */
export async function getConnection(ctx: ServiceContext, input: ConnectionRef) {
  const { userId, portal } = input;
  const { db, caller } = ctx;
  await requireUser(db, caller, userId);
  return connectionView(userId, portal, await loadConnection(db, userId, portal));
}

/** A connection that is off: no tokens; `externalUserId` stays, naming the account its listings are at. */
const cleared = {
  status: false,
  accessToken: null,
  accessTokenExpire: null,
  refreshToken: null,
  email: "",
  scope: [],
};

/** No authorization in progress: what ends one (completed, refused, or the connection taken down). */
const noAuthorization = { oauthState: null, oauthStateExpire: null, oauthCodeVerifier: null, oauthReturnUrl: null };

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
  const client = await ctx.db
    .select({ returnOrigins: apiClients.returnOrigins })
    .from(apiClients)
    .where(eq(apiClients.id, clientIdOf(ctx.caller)))
    .get();
  if (!client?.returnOrigins.includes(new URL(returnUrl).origin))
    throw DomainError.of(
      "validation_failed",
      "returnUrl: its origin is not one the client registered (PATCH /client/ returnOrigins)",
    );
}

/** Stores a token set: a renewal's, or (`completing`) a new connection's, which ends its authorization. */
async function storeTokens(
  db: Db,
  env: Env,
  target: { userId: number; portal: Marketplace; completing: boolean },
  tokens: TokenSet,
) {
  const { userId, portal } = target;
  const authorization = target.completing ? noAuthorization : {};
  const values = {
    status: true,
    externalUserId: tokens.account.id,
    accessToken: await seal(tokens.accessToken, env),
    accessTokenExpire: tokens.expiresAt.toISOString(),
    refreshToken: await seal(tokens.refreshToken, env),
    // A deleted user's connection, kept while its jobs end, never stores personal data again.
    email: sql<string>`CASE WHEN EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.deletedAt} IS NOT NULL) THEN '' ELSE ${tokens.account.email} END`,
    scope: tokens.scope,
    ...authorization,
    updatedAt: nowIso(),
  };
  // The connection shows in cached responses of the user (GET /oauth/, /attributes/ with userId).
  const {
    row: [row],
  } = await namedBatch(db, {
    row: db
      .insert(portalConnections)
      .values({ userId, portal, ...values })
      .onConflictDoUpdate({ target: [portalConnections.userId, portalConnections.portal], set: values })
      .returning(),
    revisions: bumpRevisions(db, [userRevision(userId)]),
  });
  return row;
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
    const stored = await storeTokens(db, env, { ...input, completing: true }, tokens);
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
  ctx: JobContext,
  input: { portal: Marketplace; state: string; code: string; error: string; publicOrigin: string },
): Promise<URL | undefined> {
  const userId = Number(input.state.split(".")[0]);
  if (!Number.isSafeInteger(userId)) return undefined;
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
 * it stays apart from the new account, settled unresolved at its next run (publishJobs.ts `unresolvedWait`).
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

/**
 * Revokes sealed tokens at the portal, best effort: ours are cleared whatever it answers, and a portal
 * that does not answer keeps its copies until they expire.
 */
async function revokeAtPortal(env: Env, portal: Marketplace, ...tokens: (string | null | undefined)[]) {
  const gateway = new PortalGateway(env, portal);
  for (const sealed of tokens) {
    if (sealed) await gateway.revoke(await open(sealed, env)).catch(() => undefined);
  }
}

/** DELETE: revokes the tokens at the portal (best effort) and forgets them. */
export async function disconnect(ctx: ServiceContext, input: ConnectionRef) {
  const { userId, portal } = input;
  const { db, env, caller } = ctx;
  await requireUser(db, caller, userId);
  await revokeAtPortal(env, portal, (await loadConnection(db, userId, portal))?.refreshToken);
  const values = { ...cleared, ...noAuthorization, updatedAt: nowIso() };
  await db.batch([
    db
      .update(portalConnections)
      .set(values)
      .where(and(eq(portalConnections.userId, userId), eq(portalConnections.portal, portal))),
    bumpRevisions(db, [userRevision(userId)], ctx.precondition),
  ]);
  return connectionView(userId, portal, undefined);
}

/**
 * Runs a marketplace call with the user's access token: renewed first when it has expired, and once
 * more when the portal does not accept it. `current` is the connection row when the caller read it
 * already (a publish job reads it with its claim).
 */
export async function withAccessToken<T>(
  ctx: Pick<JobContext, "db" | "env">,
  target: { userId: number; portal: Marketplace; current?: ConnectionRow | undefined },
  call: (gateway: PortalGateway, token: string) => Promise<T>,
): Promise<T> {
  const { db, env } = ctx;
  const { userId, portal } = target;
  const gateway = new PortalGateway(env, portal);
  const current = "current" in target ? target.current : await loadConnection(db, userId, portal);
  if (!current?.status || !current.refreshToken) {
    throw new PortalError("refused", "user is not connected to the portal");
  }
  let token =
    current.accessToken && current.accessTokenExpire && current.accessTokenExpire > nowIso()
      ? await open(current.accessToken, env)
      : await renewAccess(db, env, { userId, portal, seen: current.accessToken });
  try {
    return await call(gateway, token);
  } catch (error) {
    if (!(error instanceof PortalError) || error.kind !== "unauthorized") throw error;
    const seen = await loadConnection(db, userId, portal);
    token = await renewAccess(db, env, { userId, portal, seen: seen?.accessToken ?? null, refused: token });
    return call(gateway, token);
  }
}

/** What a renewal under the user's lock came to (an error's class does not cross the lock's RPC). */
type Renewal = { token: string } | { error: { kind: PortalError["kind"]; message: string } };

/**
 * A fresh access token for the connection, one renewal per connection at a time: the user's Durable
 * Object runs them in turn (`exclusive`), so jobs that found the token expired together do not spend
 * the one-use refresh token against each other. Each, in its turn, reads the connection again: when
 * another renewal stored a new access token since the caller read `seen` (and it is not the one the
 * portal just `refused`), that token is the response; otherwise the freshest refresh token is spent. Only
 * the portal's refusal of that freshest one ends the connection.
 */
async function renewAccess(
  db: Db,
  env: Env,
  input: { userId: number; portal: Marketplace; seen: string | null; refused?: string },
): Promise<string> {
  const { userId, portal } = input;
  // The lock answers what the work answered, as it is: a Renewal.
  const renewal = (await userTokens(env.USER_TOKENS, userId).exclusive(
    `refresh:${portal}`,
    async (): Promise<Renewal> => {
      const row = await loadConnection(db, userId, portal);
      if (!row?.status || !row.refreshToken)
        return { error: { kind: "refused", message: "user is not connected to the portal" } };
      if (
        row.accessToken &&
        row.accessToken !== input.seen &&
        row.accessTokenExpire &&
        row.accessTokenExpire > nowIso()
      ) {
        const stored = await open(row.accessToken, env);
        if (stored !== input.refused) return { token: stored };
      }
      try {
        const tokens = await new PortalGateway(env, portal).refresh(await open(row.refreshToken, env));
        await storeTokens(db, env, { userId, portal, completing: false }, tokens);
        return { token: tokens.accessToken };
      } catch (error) {
        const failure = portalErrorOf(error);
        if (failure.kind !== "transient") await expireConnection(db, userId, portal);
        return { error: { kind: failure.kind, message: failure.message } };
      }
    },
  )) as Renewal;
  if ("error" in renewal) throw new PortalError(renewal.error.kind, renewal.error.message);
  return renewal.token;
}

/**
 * The portal refused to renew the access: the connection is over until the user connects again, and
 * `connection.expired` says so (once: only a connection that was still on reports it).
 */
async function expireConnection(db: Db, userId: number, portal: Marketplace): Promise<void> {
  const connection = and(eq(portalConnections.userId, userId), eq(portalConnections.portal, portal));
  await db.batch([
    eventOf(
      db,
      {
        type: "connection.expired",
        userId,
        portal,
        data: sql`json_object('reason', 'the portal refused to renew the access')`,
      },
      sql`EXISTS (SELECT 1 FROM portal_connections WHERE user_id = ${userId} AND portal = ${portal} AND status = 1)`,
    ),
    db
      .update(portalConnections)
      .set({ ...cleared, updatedAt: nowIso() })
      .where(connection),
  ]);
}

/** Revokes (best effort) every marketplace connection of a user; the caller deletes the rows. */
export async function revokeAllConnections(
  ctx: Pick<JobContext, "db" | "env">,
  input: { userId: number },
): Promise<void> {
  const rows = await ctx.db.select().from(portalConnections).where(eq(portalConnections.userId, input.userId));
  for (const row of rows) await revokeAtPortal(ctx.env, row.portal, row.accessToken, row.refreshToken);
}

/**
 * A deleted user's connection to a portal is kept (without its e-mail) while a job of the user is still
 * open there (an unpublish asked for before the delete, a job that may be at the marketplace), so that
 * the job can run or settle; once none is, it is revoked at the portal (best effort) and forgotten. The
 * user's deletion calls this for its own connections, the cron for the rest (at most `limit` a run).
 */
export async function closeDeletedUsersConnections(
  ctx: Pick<JobContext, "db" | "env">,
  input: { userId?: number; limit: number },
): Promise<number> {
  const { db, env } = ctx;
  // No job of the connection's user is open on its portal (checked again where the row is deleted).
  const noOpenJob = sql`NOT EXISTS (SELECT 1 FROM ${publishJobs} q WHERE q.user_id = ${portalConnections.userId}
    AND q.portal = ${portalConnections.portal} AND q.status IN ('pending', 'processing'))`;
  const rows = await db
    .select({ connection: portalConnections })
    .from(portalConnections)
    .innerJoin(users, eq(users.id, portalConnections.userId))
    .where(
      and(
        isNotNull(users.deletedAt),
        input.userId === undefined ? undefined : eq(portalConnections.userId, input.userId),
        noOpenJob,
      ),
    )
    .limit(input.limit);
  for (const { connection } of rows)
    await revokeAtPortal(env, connection.portal, connection.accessToken, connection.refreshToken);
  await batchAll(
    db,
    rows.map(({ connection }) =>
      db
        .delete(portalConnections)
        .where(
          and(
            eq(portalConnections.userId, connection.userId),
            eq(portalConnections.portal, connection.portal),
            noOpenJob,
          ),
        ),
    ),
  );
  return rows.length;
}

/** Connections holding a token not sealed with the current key (the filter of a key rotation). */
const underOldKey = (keyId: string) =>
  or(
    and(isNotNull(portalConnections.accessToken), notLike(portalConnections.accessToken, `v2.${keyId}.%`)),
    and(isNotNull(portalConnections.refreshToken), notLike(portalConnections.refreshToken, `v2.${keyId}.%`)),
  );

/** How many connections still hold a token sealed with another key than the current one. */
export async function tokensToReseal(ctx: Pick<JobContext, "db" | "env">): Promise<number> {
  const { db, env } = ctx;
  const [row] = await db
    .select({ n: sql<number>`count(*)` })
    .from(portalConnections)
    .where(underOldKey(await currentKeyId(env)));
  return row?.n ?? 0;
}

/**
 * Key rotation: re-seals, with the current key, up to `limit` connections whose tokens were sealed with
 * the previous one (the cron runs it every minute; nothing to do without TOKEN_ENCRYPTION_KEY_PREVIOUS).
 */
export async function reencryptTokens(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env } = ctx;
  if (!env.TOKEN_ENCRYPTION_KEY_PREVIOUS || !env.TOKEN_ENCRYPTION_KEY) return 0;
  const rows = await db
    .select()
    .from(portalConnections)
    .where(underOldKey(await currentKeyId(env)))
    .limit(input.limit);
  const reseal = async (sealed: string | null) => (sealed ? seal(await open(sealed, env), env) : sealed);
  const resealed = await Promise.all(
    rows.map(async (row) => ({
      row,
      accessToken: await reseal(row.accessToken),
      refreshToken: await reseal(row.refreshToken),
    })),
  );
  const updates = resealed.map(({ row, accessToken, refreshToken }) =>
    db
      .update(portalConnections)
      .set({ accessToken, refreshToken })
      .where(
        and(
          eq(portalConnections.userId, row.userId),
          eq(portalConnections.portal, row.portal),
          // Unless a refresh stored new tokens meanwhile.
          eq(portalConnections.updatedAt, row.updatedAt),
        ),
      ),
  );
  await batchAll(db, updates);
  return rows.length;
}
