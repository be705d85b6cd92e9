import { describe, expect, it } from "vitest";
import { LANE_SHARES } from "../../src/jobs/lanes";
import { newClient } from "../harness/api";
import { clientFeeds, dayLater, dueFeedsAt, FEEDS, feedName, serveFeed } from "../harness/feeds";
import { connectedSeller } from "../harness/marketplace";

/**
 * A client with 100 feeds due at one minute delays another client's feed by no more than its share: the
 * cron takes due feeds by turns of client, and each client's fetches run in its own lanes.
 */

describe("feeds due at one minute", () => {
  it("another client's feed is queued at its turn and fetched beside the busy client's first", async () => {
    const busy = await newClient({ partner: true });
    const other = await newClient({ partner: true });
    const internal = await newClient({ internal: true });
    const busyFeeds = clientFeeds(() => busy.key);
    const otherFeeds = clientFeeds(() => other.key);

    // The busy client's feeds each keep their fetch waiting for an answer (30 s before it gives up).
    const busyUser = await connectedSeller(busy.key, internal.key);
    const busyName = feedName("busy");
    const busyIds: number[] = [];
    for (let i = 0; i < 100; i += 1)
      busyIds.push((await busyFeeds.createFeed({ userId: busyUser, url: `${FEEDS}/hang/${busyName}?n=${i}` })).feedId);
    const otherUser = await connectedSeller(other.key, internal.key);
    const otherName = feedName("other");
    const { feedId } = await otherFeeds.createFeed({ userId: otherUser, url: await serveFeed(otherName, "") });

    // A minute queues 100 feeds, by turns of client: the other client's one, and 99 of the busy client's
    // (its last waits for the next minute); a queue in order of creation would have left the other's out.
    expect(await dueFeedsAt(dayLater())).toBe(100);
    expect((await otherFeeds.fetchedFeed(feedId)).lastFetch).toMatchObject({ outcome: "fetched", items: 0 });
    // The busy client's share of the feeds lane is one fetch at a time, still waiting for its first
    // answer: the other client's fetch did not wait behind it (in one shared lane it would wait 99 × 30 s).
    const arrivals = await (await fetch(`${FEEDS}/arrivals`)).json<string[]>();
    expect(arrivals.filter((name) => name === busyName).length).toBeLessThanOrEqual(LANE_SHARES.feeds.slots);
    for (const busyId of busyIds.slice(0, 10)) expect((await busyFeeds.feedOf(busyId)).queued).toBe(true);
  }, 300_000);
});
