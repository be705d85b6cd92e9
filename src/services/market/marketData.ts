import { and, asc, between, eq, inArray, sql } from "drizzle-orm";
import { namedBatches } from "../../db/client";
import { settledUser } from "../../db/directory";
import { groupOfUser, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import { adPublications, adStatistics, ads, bids, portalConnections } from "../../db/schema";
import { changedFrom } from "../../db/upserts";
import { DomainError } from "../../lib/errors";
import { keyedBy, prefixedPerMarketplace } from "../../lib/marketplaces";
import { formatDateTime } from "../../lib/time";
import { MARKETPLACES, type Marketplace } from "../../lib/vocabulary";
import { visibleAds } from "../ads/access";
import { eventOf } from "../events/events";
import { withAccessToken } from "../publishing/connections";
import { requireUser } from "../shared/access";
import type { JobContext, ServiceContext } from "../shared/context";

/**
 * Pulls bids and the statistics of yesterday and today for at most `limit` connected users, those
 * waiting longest first (the cron calls it every minute, so every connection gets its turn).
 */
export async function pullMarketData(ctx: JobContext, input: { limit: number }) {
  const { db, now } = ctx;
  const { limit } = input;
  const batch = await db
    .select({ userId: portalConnections.userId, portal: portalConnections.portal })
    .from(portalConnections)
    .where(and(eq(portalConnections.status, true), settledUser(portalConnections.userId)))
    .orderBy(sql`${portalConnections.marketDataPulledAt} IS NOT NULL`, asc(portalConnections.marketDataPulledAt))
    .limit(limit);
  const dates = [new Date(now.getTime() - 86_400_000), now].map((d) => d.toISOString().slice(0, 10));
  let bidCount = 0;
  for (const { userId, portal } of batch) {
    await withAccessToken(ctx, { userId, portal: portal as Marketplace }, async (gateway, token) => {
      const remoteBids = await gateway.bids(token);
      const daily = await Promise.all(
        dates.map(async (date) => ({ date, rows: await gateway.statistics(token, date) })),
      );
      const remoteIds = [
        ...new Set([...remoteBids.map((b) => b.remoteAdId), ...daily.flatMap((d) => d.rows.map((r) => r.remoteAdId))]),
      ];
      if (remoteIds.length === 0) return;
      const owned = await db
        .select({ adId: adPublications.adId, remoteAdId: adPublications.remoteAdId })
        .from(adPublications)
        .innerJoin(ads, eq(ads.id, adPublications.adId))
        .where(
          and(eq(adPublications.portal, portal), eq(ads.userId, userId), inList(adPublications.remoteAdId, remoteIds)),
        );
      const adOf = new Map(owned.map((o) => [o.remoteAdId, o.adId]));
      // New bids and the day rows go in one batch: one round trip per connection.
      const bidInserts = remoteBids.flatMap((bid) => {
        const adId = adOf.get(bid.remoteAdId);
        if (!adId) return [];
        const values = {
          id: nextId(bids, groupOfUser(userId)),
          adId,
          portal: portal as Marketplace,
          remoteBidId: bid.bidId,
          amount: bid.amount,
          name: bid.name,
          message: bid.message,
          placedAt: bid.placedAt,
        };
        // The event goes first, written only when the bid is new.
        return [
          {
            event: eventOf(
              db,
              {
                type: "bid.received",
                userId,
                adId,
                portal,
                data: sql`json_object('bidId', ${bid.bidId}, 'amount', ${bid.amount}, 'name', ${bid.name}, 'message', ${bid.message}, 'placedAt', ${bid.placedAt})`,
              },
              sql`NOT EXISTS (SELECT 1 FROM bids WHERE portal = ${portal} AND remote_bid_id = ${bid.bidId})`,
            ),
            bid: db.insert(bids).values(values).onConflictDoNothing().returning({ id: bids.id }),
          },
        ];
      });
      const statisticUpserts = daily.flatMap(({ date, rows }) =>
        rows.flatMap((row) => {
          const adId = adOf.get(row.remoteAdId);
          // A day without any activity is no news: no row, no event (docs/capacity.md counts one row a
          // day per listing with activity).
          if (!adId || [row.views, row.asqs, row.bids, row.url, row.phone, row.favorites].every((n) => n === 0))
            return [];
          const values = {
            views: row.views,
            asqs: row.asqs,
            bids: row.bids,
            url: row.url,
            phone: row.phone,
            favorites: row.favorites,
          };
          // An event only for a day whose numbers changed (the same day is pulled again every minute).
          return [
            {
              event: eventOf(
                db,
                {
                  type: "statistics.updated",
                  userId,
                  adId,
                  portal,
                  data: sql`json_object('date', ${date}, 'views', ${row.views}, 'asqs', ${row.asqs}, 'bids', ${row.bids}, 'url', ${row.url}, 'phone', ${row.phone}, 'favorites', ${row.favorites})`,
                },
                sql`NOT EXISTS (SELECT 1 FROM ad_statistics WHERE ad_id = ${adId} AND portal = ${portal} AND date = ${date}
                AND views = ${row.views} AND asqs = ${row.asqs} AND bids = ${row.bids} AND url = ${row.url}
                AND phone = ${row.phone} AND favorites = ${row.favorites})`,
              ),
              statistics: db
                .insert(adStatistics)
                .values({ adId, portal: portal as Marketplace, date, ...values })
                .onConflictDoUpdate({
                  target: [adStatistics.adId, adStatistics.portal, adStatistics.date],
                  set: values,
                  // The same day pulled again unchanged (every minute): the row is left alone, nothing written.
                  setWhere: changedFrom(
                    adStatistics.views,
                    adStatistics.asqs,
                    adStatistics.bids,
                    adStatistics.url,
                    adStatistics.phone,
                    adStatistics.favorites,
                  ),
                }),
            },
          ];
        }),
      );
      const written = await namedBatches(db, [...bidInserts, ...statisticUpserts]);
      for (const group of written) if ("bid" in group) bidCount += group.bid.length;
    }).catch((error) =>
      console.error(
        JSON.stringify({ level: "warn", msg: "market data pull failed", userId, portal, error: String(error) }),
      ),
    );
    await db
      .update(portalConnections)
      .set({ marketDataPulledAt: now.toISOString() })
      .where(and(eq(portalConnections.userId, userId), eq(portalConnections.portal, portal)));
  }
  return { connections: batch.length, bids: bidCount };
}

const bidView = (row: typeof bids.$inferSelect) => ({
  bidId: row.remoteBidId,
  adId: row.adId,
  portal: row.portal,
  amount: row.amount,
  name: row.name,
  message: row.message,
  isRead: row.isRead,
  placed: formatDateTime(row.placedAt),
});

export async function listBids(ctx: ServiceContext, input: { userId: number; adId?: number | undefined }) {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const rows = await db
    .select({ bid: bids })
    .from(bids)
    .innerJoin(ads, eq(ads.id, bids.adId))
    .where(and(eq(ads.userId, input.userId), input.adId ? eq(bids.adId, input.adId) : undefined))
    .orderBy(asc(bids.id))
    .limit(1000);
  return rows.map((r) => bidView(r.bid));
}

/** Marks bids read (or unread again); ids are the portal's bid ids shown by GET /bids/. */
export async function markBids(
  ctx: ServiceContext,
  input: { userId: number; portal: string; bidId: (number | string)[]; read: boolean },
): Promise<void> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  if (input.portal === "website") return; // the website takes no bids
  const ids = input.bidId.map(Number).filter(Number.isInteger);
  const userAds = db.select({ id: ads.id }).from(ads).where(eq(ads.userId, input.userId));
  await db
    .update(bids)
    .set({ isRead: input.read })
    .where(
      and(eq(bids.portal, input.portal as Marketplace), inList(bids.remoteBidId, ids), inArray(bids.adId, userAds)),
    );
}

const METRICS = ["views", "asqs", "bids", "url", "phone", "favorites"] as const;
type Metric = (typeof METRICS)[number];

/** POST /statistics/: daily rows and totals per portal, summed over the given ads; `false` where a portal has none. */
export async function statistics(
  ctx: ServiceContext,
  input: {
    adId: number[];
    dateStart: string;
    dateEnd: string;
    showDaily: boolean;
    showTotals: boolean;
    portal?: Marketplace | undefined;
  },
) {
  const { db, caller } = ctx;
  const visible = await visibleAds(db, caller, input.adId);
  const missing = input.adId.filter((id) => !visible.has(id));
  if (missing.length > 0) throw DomainError.of("ad_not_found", ...missing.map((id) => `adId: ad ${id} not found`));
  const rows = await db
    .select()
    .from(adStatistics)
    .where(and(inList(adStatistics.adId, input.adId), between(adStatistics.date, input.dateStart, input.dateEnd)))
    .orderBy(asc(adStatistics.date));
  const perPortal = (portal: Marketplace) => {
    const own = input.portal && input.portal !== portal ? [] : rows.filter((r) => r.portal === portal);
    const byDate = new Map<string, Record<Metric, number>>();
    for (const row of own) {
      const day = byDate.get(row.date) ?? { views: 0, asqs: 0, bids: 0, url: 0, phone: 0, favorites: 0 };
      for (const metric of METRICS) day[metric] += row[metric];
      byDate.set(row.date, day);
    }
    const daily = [...byDate.entries()].map(([date, metrics]) => ({ date, ...metrics }));
    const totals = Object.fromEntries(
      METRICS.map((metric) => {
        const values = daily.map((d) => d[metric]);
        const total = values.reduce((a, b) => a + b, 0);
        return [
          metric,
          {
            type: metric,
            minimum: Math.min(...values),
            maximum: Math.max(...values),
            total,
            average: Math.round(total / values.length),
          },
        ];
      }),
    );
    return {
      daily: daily.length && input.showDaily ? daily : (false as const),
      totals: daily.length && input.showTotals ? totals : (false as const),
    };
  };
  const views = keyedBy(MARKETPLACES, perPortal);
  return {
    adId: input.adId,
    dateStart: input.dateStart,
    dateEnd: input.dateEnd,
    showDaily: input.showDaily,
    showTotals: input.showTotals,
    ...prefixedPerMarketplace("statistics_", (marketplace) => views[marketplace].daily),
    ...prefixedPerMarketplace("totals_", (marketplace) => views[marketplace].totals),
  };
}
