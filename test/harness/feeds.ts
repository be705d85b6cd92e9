// Dealers' feeds as the tests serve, register and follow them.
import { env } from "cloudflare:test";
import type { Env } from "../../src/env";
import { handingJobsToLanes } from "../../src/jobs/handOver";
import { queueDueFeeds } from "../../src/services/feeds";
import { jobContext } from "../../src/services/shared";
import { call, eventually } from "./api";
import { onTestShard } from "./d1";

export const FEEDS = "http://feeds.test";
let feedSeq = 0;

/** A name of its own on the feed server. */
export const feedName = (what: string) => {
  feedSeq += 1;
  return `${what}-${Date.now()}-${feedSeq}`;
};

/** Serves `body` at http://feeds.test/<name> (with validators unless `conditional: false`, behind `secret`). */
export async function serveFeed(
  name: string,
  body: string,
  options: { type?: string; conditional?: boolean; secret?: string } = {},
) {
  const query = new URLSearchParams();
  if (options.conditional === false) query.set("conditional", "false");
  if (options.secret) query.set("secret", options.secret);
  const response = await fetch(`${FEEDS}/${name}?${query}`, {
    method: "PUT",
    body,
    headers: { "Content-Type": options.type ?? "application/x-ndjson" },
  });
  if (response.status !== 204) throw new Error(`the feed server refused ${name}: ${response.status}`);
  return `${FEEDS}/${name}`;
}

/** The fetches a feed server's name received: each one's headers and the status it was answered. */
export const feedRequests = async (name: string) =>
  (await fetch(`${FEEDS}/requests/${name}`)).json<{ headers: Record<string, string>; status: number }[]>();

/** The shard's cron part at `now`: due feeds queued into their clients' lanes. Answers how many. */
export const dueFeedsAt = (now: Date, base: Env = env as unknown as Env) =>
  queueDueFeeds({ ...jobContext(onTestShard(handingJobsToLanes(base))), now }, { limit: 100 });

/** An instant past every schedule's next run: an hourly feed is due, and a daily one. */
export const dayLater = () => new Date(Date.now() + 25 * 3_600_000);

/** A client's feeds as its system registers and follows them, with the key `keyOf` answers. */
export function clientFeeds(keyOf: () => string) {
  const feedOf = async (feedId: number) => (await call("GET", `/feeds/${feedId}`, { key: keyOf() })).body.data;

  /** The feed once a fetch after `after` (an ISO instant, Amsterdam time as shown) ended. */
  const fetchedFeed = (feedId: number, after = "") =>
    eventually(async () => {
      const feed = await feedOf(feedId);
      const { lastFetch } = feed;
      return !feed.queued && lastFetch && lastFetch.at >= after ? { ...feed, lastFetch } : undefined;
    }, `feed ${feedId}'s fetch`);

  const createFeed = async (body: Record<string, unknown>) => {
    const answer = await call("POST", "/feeds/", {
      key: keyOf(),
      body: { format: "ndjson", schedule: { every: "hourly", minute: 0 }, ...body },
    });
    if (answer.status !== 200) throw new Error(`feed not created: ${JSON.stringify(answer.body)}`);
    return answer.body.data as { feedId: number };
  };

  /** Events of `type` about the user, oldest first. */
  const eventsOf = async (userId: number, type: string) =>
    (await call("GET", `/events/?userId=${userId}&type=${type}&limit=500`, { key: keyOf() })).body.data as {
      data: Record<string, unknown>;
    }[];

  return { feedOf, fetchedFeed, createFeed, eventsOf };
}
