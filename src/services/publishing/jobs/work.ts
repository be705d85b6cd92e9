// A job's work at its target: the website (ours, always done) or a marketplace, sent or only settled by asking.
import { getDb } from "../../../db/client";
import type { ads } from "../../../db/schema";
import type { ShardEnv } from "../../../env";
import { mediaBaseOf } from "../../../lib/media";
import type { Marketplace } from "../../../lib/vocabulary";
import { PortalError, type PortalGateway } from "../../../portals/gateway";
import { type ConnectionRow, withAccessToken } from "../connections";
import { assembleListing, type ListingRows } from "../listing";
import type { ListingOutcome, PublishJobRow } from "./states";

const WEBSITE_LISTING_DAYS = 30;

export type AdRow = typeof ads.$inferSelect;

/** A job's work: sent, or only settled by asking (with the reason it fails for when nothing is held). */
export type Work = "send" | { settle: string };

/** The website is ours: its work always happens, and a job settled there held nothing. */
export function websiteOutcome(job: PublishJobRow, work: Work): ListingOutcome {
  if (job.action === "unpublish") return { online: false };
  if (work !== "send") throw new PortalError("refused", work.settle);
  const start = new Date();
  return {
    remoteAdId: job.adId,
    online: true,
    startDate: start.toISOString(),
    closeDate: new Date(start.getTime() + WEBSITE_LISTING_DAYS * 86_400_000).toISOString(),
  };
}

/**
 * The job's work at its marketplace (`send`), or only the question of what the marketplace holds of
 * it (`settle`). A refusal may come after the marketplace committed the work (a 422 after the commit),
 * so it is final only once the marketplace says it holds nothing of it; a transient failure is retried,
 * and the retry finds what an earlier attempt made by its reference.
 */
export async function marketplaceCall(
  env: ShardEnv,
  job: PublishJobRow,
  work: Work,
  read: {
    ad: AdRow | undefined;
    remoteAdId: number;
    connection: ConnectionRow | undefined;
    listingRows: ListingRows | undefined;
  },
): Promise<ListingOutcome> {
  const db = getDb(env.shard.d1);
  const portal = job.portal as Marketplace;
  const externalRef = job.externalRef ?? `ad-${job.adId}-${job.id}`;
  const { ad, remoteAdId } = read;
  const listing = () => {
    // Read in the claim's batch for every action that sends a listing (claimOf's `sendsListing`).
    if (!read.listingRows || !ad) throw new Error(`the listing of job ${job.id} was not read`);
    return assembleListing(read.listingRows, { ad, externalRef, withImages: job.images, mediaBase: mediaBaseOf(env) });
  };
  const target = { userId: job.userId, portal, current: read.connection };
  return withAccessToken({ db, env }, target, async (gateway, token) => {
    const held = () => heldAtMarketplace(gateway, token, job, { externalRef, remoteAdId });
    if (work !== "send") {
      const outcome = await held();
      if (outcome) return outcome;
      throw new PortalError("refused", work.settle);
    }
    try {
      switch (job.action) {
        case "publish": {
          // A placement is always a new listing; an earlier attempt of this one may have made it already.
          if (job.attempts > 1 || job.retryOf) {
            const existing = await gateway.findListing(token, externalRef);
            if (existing?.online) return existing;
          }
          return await gateway.createListing(token, await listing());
        }
        case "update":
          return await gateway.updateListing(token, remoteAdId, await listing(), externalRef);
        case "unpublish":
          if (remoteAdId) await gateway.deleteListing(token, remoteAdId, externalRef);
          return { online: false };
        case "feature":
          // The job's reference makes a repeated purchase of this feature a no-op at the marketplace.
          await gateway.buyFeature(token, remoteAdId, job.feature ?? "", externalRef);
          return {};
      }
    } catch (error) {
      if (!(error instanceof PortalError) || error.kind !== "refused") throw error;
      const outcome = await held();
      if (outcome) return outcome;
      throw error;
    }
  });
}

/**
 * What the marketplace holds of a job's work, asked by its reference: the placement's listing, the
 * feature purchase, the listing taken offline by an unpublish; null when it holds none of it. An update
 * changes neither money nor whether the listing is live, so it is never taken as done.
 */
async function heldAtMarketplace(
  gateway: PortalGateway,
  token: string,
  job: PublishJobRow,
  refs: { externalRef: string; remoteAdId: number },
): Promise<ListingOutcome | null> {
  switch (job.action) {
    case "publish": {
      const found = await gateway.findListing(token, refs.externalRef);
      return found?.online ? found : null;
    }
    case "feature":
      return refs.remoteAdId && (await gateway.holdsFeature(token, refs.remoteAdId, refs.externalRef)) ? {} : null;
    case "unpublish": {
      const listing = refs.remoteAdId ? await gateway.getListing(token, refs.remoteAdId) : null;
      return listing?.online ? null : { online: false };
    }
    case "update":
      return null;
  }
}
