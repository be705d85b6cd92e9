import { and, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../../db/client";
import { portalConnections, users } from "../../../db/schema";
import { userTokens } from "../../../durable/UserTokens";
import type { ShardEnv } from "../../../env";
import { open, seal } from "../../../lib/secretBox";
import { nowIso } from "../../../lib/time";
import type { Marketplace } from "../../../lib/vocabulary";
import { PortalError, PortalGateway, portalErrorOf, type TokenSet } from "../../../portals/gateway";
import { eventOf } from "../../events/events";
import type { JobContext } from "../../shared/context";
import { bumpRevisions, userRevision } from "../../shared/revisions";
import { type ConnectionRow, cleared, loadConnection, noAuthorization } from "./connection";

/** Stores a token set: a renewal's, or (`completing`) a new connection's, which ends its authorization. */
export async function storeTokens(
  ctx: Pick<JobContext, "db" | "env">,
  input: { userId: number; portal: Marketplace; completing: boolean; tokens: TokenSet },
) {
  const { db, env } = ctx;
  const { userId, portal, tokens } = input;
  const authorization = input.completing ? noAuthorization : {};
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
  env: ShardEnv,
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
        await storeTokens({ db, env }, { userId, portal, completing: false, tokens });
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
