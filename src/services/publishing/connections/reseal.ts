import { and, eq, isNotNull, notLike, or, sql } from "drizzle-orm";
import { batchAll } from "../../../db/client";
import { settledUser } from "../../../db/directory";
import { portalConnections } from "../../../db/schema";
import { currentKeyId, open, seal } from "../../../lib/secretBox";
import type { JobContext } from "../../shared/context";

/** Connections holding a token not sealed with the current key (the filter of a key rotation). */
const underOldKey = (keyId: string) =>
  or(
    and(isNotNull(portalConnections.accessToken), notLike(portalConnections.accessToken, `v2.${keyId}.%`)),
    and(isNotNull(portalConnections.refreshToken), notLike(portalConnections.refreshToken, `v2.${keyId}.%`)),
  );

/**
 * How many connections still hold a token sealed with another key than the current one, a moving group's
 * included (its copy is re-sealed on the shard it moves to): the previous key may go at 0 on every shard.
 */
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
 * A moving group's rows are the move's (their fence refuses the write): the shard they move to re-seals them.
 */
export async function reencryptTokens(ctx: JobContext, input: { limit: number }): Promise<number> {
  const { db, env } = ctx;
  if (!env.TOKEN_ENCRYPTION_KEY_PREVIOUS || !env.TOKEN_ENCRYPTION_KEY) return 0;
  const rows = await db
    .select()
    .from(portalConnections)
    .where(and(underOldKey(await currentKeyId(env)), settledUser(portalConnections.userId)))
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
