import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { ads, users } from "../../db/schema";
import { ApiError } from "../../lib/errors";
import { type Scope, visibleUsers } from "../shared/access";
import { USERS_SCOPE, userScope } from "../shared/revisions";

export type AdRow = typeof ads.$inferSelect;

export const ADS_SCOPE = "ads";
/** Cache scopes an ad write touches: the ad list, and the owner's (contact `active`, folder totals). */
export const adWriteScopes = (userId: number) => [ADS_SCOPE, userScope(userId), USERS_SCOPE];

const adNotFound = (adId: number) => new ApiError(404, [`adId: ad ${adId} not found`]);

/** The ads among `adIds` that the scope may act on. */
export async function visibleAds(db: Db, scope: Scope, adIds: number[]): Promise<Map<number, AdRow>> {
  if (adIds.length === 0) return new Map();
  const rows = await db
    .select({ ad: ads })
    .from(ads)
    .innerJoin(users, eq(users.id, ads.userId))
    .where(and(inList(ads.id, adIds), visibleUsers(scope)));
  return new Map(rows.map(({ ad }) => [ad.id, ad]));
}

export async function requireAd(db: Db, scope: Scope, adId: number): Promise<AdRow> {
  const ad = (await visibleAds(db, scope, [adId])).get(adId);
  if (!ad) throw adNotFound(adId);
  return ad;
}
