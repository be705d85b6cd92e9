// POST /feeds/preview: a URL fetched once, and the sync's dry run of what it serves.
import { DomainError } from "../../lib/errors";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { previewSync, type SyncPlan } from "../syncs";
import { FEED_LIMITS, failureOf, fetchFeed } from "./fetching";
import { feedStock } from "./formats";
import type { FeedPreview } from "./schemas";

/**
 * What a feed at `url` would do as the user's stock, changing nothing: fetched once through the outbound
 * guard (as the cron fetches), then the dry run of `POST /syncs/preview`. A fetch that fails answers 422
 * `feed_unreadable`, naming why (HTTP status, timeout, size, the line that is not parseable).
 */
export async function previewFeed(ctx: ServiceContext, input: FeedPreview): Promise<SyncPlan> {
  const { userId, removal, maxEndedPercent } = input;
  // The user first: nothing is fetched for a user the caller cannot see.
  await requireUser(ctx.db, ctx.caller, userId);
  try {
    const response = await fetchFeed(ctx.env, { ...input, header: input.header ?? null }, FEED_LIMITS);
    const { stock } = feedStock(response.body as ReadableStream<Uint8Array>, input.format, FEED_LIMITS);
    return await previewSync(ctx, { options: { userId, removal, maxEndedPercent }, stock });
  } catch (error) {
    const failure = failureOf(error);
    if (!failure) throw error;
    throw DomainError.of("feed_unreadable", `url: ${failure.message}`);
  }
}
