import { lt, sql } from "drizzle-orm";
import { adStatistics } from "../../db/schema";
import type { JobContext } from "../shared/context";

/**
 * How long a listing's daily statistics stay in D1: a quarter, the window `POST /statistics/` reads from
 * (docs/capacity.md counts them; older days are dropped, not archived).
 */
export const STATISTICS_RETENTION_DAYS = 90;

/** Days past the window leave, oldest first, `limit` rows a minute (the date index finds them). */
export async function purgeOldStatistics(
  ctx: Pick<JobContext, "db" | "now">,
  input: { limit: number },
): Promise<number> {
  const cutoff = new Date(ctx.now.getTime() - STATISTICS_RETENTION_DAYS * 86_400_000).toISOString().slice(0, 10);
  const old = ctx.db
    .select({ rowid: sql`rowid` })
    .from(adStatistics)
    .where(lt(adStatistics.date, cutoff))
    .orderBy(adStatistics.date)
    .limit(input.limit);
  const result = await ctx.db.delete(adStatistics).where(sql`rowid IN ${old}`);
  return result.meta.changes ?? 0;
}
