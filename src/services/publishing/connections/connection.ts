import { and, eq } from "drizzle-orm";
import type { Db } from "../../../db/client";
import { portalConnections } from "../../../db/schema";
import type { Env } from "../../../env";
import { mask, open } from "../../../lib/secretBox";
import { formatDateTime } from "../../../lib/time";
import type { Marketplace } from "../../../lib/vocabulary";
import { PortalGateway } from "../../../portals/gateway";
import { requireUser } from "../../shared/access";
import type { ServiceContext } from "../../shared/context";

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

export async function loadConnection(db: Db, userId: number, portal: Marketplace) {
  return connectionQuery(db, userId, portal).get();
}

/** Which connection: a user's at one portal. */
export interface ConnectionRef {
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
export const cleared = {
  status: false,
  accessToken: null,
  accessTokenExpire: null,
  refreshToken: null,
  email: "",
  scope: [],
};

/** No authorization in progress: what ends one (completed, refused, or the connection taken down). */
export const noAuthorization = {
  oauthState: null,
  oauthStateExpire: null,
  oauthCodeVerifier: null,
  oauthReturnUrl: null,
};

/**
 * Revokes sealed tokens at the portal, best effort: ours are cleared whatever it answers, and a portal
 * that does not answer keeps its copies until they expire.
 */
export async function revokeAtPortal(env: Env, portal: Marketplace, ...tokens: (string | null | undefined)[]) {
  const gateway = new PortalGateway(env, portal);
  for (const sealed of tokens) {
    if (sealed) await gateway.revoke(await open(sealed, env)).catch(() => undefined);
  }
}
