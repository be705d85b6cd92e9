import { and, eq, isNotNull, sql } from "drizzle-orm";
import { batchAll } from "../../../db/client";
import { portalConnections, publishJobs, users } from "../../../db/schema";
import { nowIso } from "../../../lib/time";
import { requireUser } from "../../shared/access";
import type { JobContext, ServiceContext } from "../../shared/context";
import { bumpRevisions, requirePrecondition, userRevision } from "../../shared/revisions";
import {
  type ConnectionRef,
  cleared,
  connectionView,
  loadConnection,
  noAuthorization,
  revokeAtPortal,
} from "./connection";

/** DELETE: revokes the tokens at the portal (best effort) and forgets them. */
export async function disconnect(ctx: ServiceContext, input: ConnectionRef) {
  const { userId, portal } = input;
  const { db, env, caller } = ctx;
  await requireUser(db, caller, userId);
  await requirePrecondition(db, [userRevision(userId)], ctx.precondition);
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
