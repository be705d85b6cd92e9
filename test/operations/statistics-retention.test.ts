import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { purgeOldStatistics, STATISTICS_RETENTION_DAYS } from "../../src/services/market";
import { call, newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";

/** Daily statistics are a growing table with a window: the days past it leave D1, oldest first, a batch a minute. */

const day = (now: Date, daysAgo: number) => new Date(now.getTime() - daysAgo * 86_400_000).toISOString().slice(0, 10);

describe("statistics retention", () => {
  it("drops the days past the window, oldest first and at most the limit a run; the window's days stay readable", async () => {
    const { key } = await newClient({ partner: true });
    const { userId } = await createUser(key);
    const { adId } = await createAd(key, userId);
    const now = new Date("2026-11-28T12:00:00Z");
    const ages = [STATISTICS_RETENTION_DAYS + 30, STATISTICS_RETENTION_DAYS + 2, STATISTICS_RETENTION_DAYS + 1, 10, 0];
    await env.DB.batch(
      ages.map((age) =>
        env.DB.prepare("INSERT INTO ad_statistics (ad_id, portal, date, views) VALUES (?, 'portal_a', ?, 3)").bind(
          adId,
          day(now, age),
        ),
      ),
    );
    const dates = async () =>
      (
        await env.DB.prepare("SELECT date FROM ad_statistics WHERE ad_id = ? ORDER BY date")
          .bind(adId)
          .all<{ date: string }>()
      ).results.map((row) => row.date);
    const ctx = { db: getDb(env.DB), now };
    expect(await purgeOldStatistics(ctx, { limit: 2 })).toBe(2);
    expect(await dates()).toEqual([day(now, STATISTICS_RETENTION_DAYS + 1), day(now, 10), day(now, 0)]);
    expect(await purgeOldStatistics(ctx, { limit: 2 })).toBe(1);
    expect(await purgeOldStatistics(ctx, { limit: 2 })).toBe(0);
    expect(await dates()).toEqual([day(now, 10), day(now, 0)]);
    // What stays is what the statistics call answers.
    const answer = await call("POST", "/statistics/", {
      key,
      body: { adId, portal: "portal_a", dateStart: day(now, 20), dateEnd: day(now, 0) },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(JSON.stringify(answer.body.data)).toContain(day(now, 10));
  });
});
