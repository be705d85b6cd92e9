import { and, eq, gt, inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { adFeatures, adPublications, ads, queueItems } from "../db/schema";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import { type Listing, type MarketplacePortal, PortalError } from "../portals/gateway";
import { ADS_SCOPE } from "../services/ads";
import { bumpRevisions } from "../services/cache";
import { listImages } from "../services/images";
import { withAccessToken } from "../services/portalConnections";
import { failItem } from "../services/publishing";

const WEBSITE_LISTING_DAYS = 30;

/**
 * One publish, update, unpublish or feature item. At-least-once safe: the row is read again and a
 * finished, cancelled or superseded item is skipped; charges were made when it was queued and are
 * given back only through the ledger's once-per-item refund. A refusal marks the item failed; a
 * transient failure is thrown so the queue retries it with backoff.
 */
export async function runPublishItem(env: Env, itemId: number): Promise<void> {
  const db = getDb(env.DB);
  const item = await db.select().from(queueItems).where(eq(queueItems.id, itemId)).get();
  if (!item || item.status === "done" || item.status === "cancelled" || item.status === "error") return;

  if (item.action === "update") {
    // A newer queued change of the same ad on the same portal makes this update pointless.
    const newer = await db
      .select({ id: queueItems.id })
      .from(queueItems)
      .where(
        and(
          eq(queueItems.adId, item.adId),
          eq(queueItems.portal, item.portal),
          gt(queueItems.id, item.id),
          inArray(queueItems.action, ["update", "unpublish"]),
          inArray(queueItems.status, ["pending", "processing"]),
        ),
      )
      .get();
    if (newer) {
      await db
        .update(queueItems)
        .set({ status: "cancelled", reason: "superseded", updatedAt: nowIso() })
        .where(eq(queueItems.id, item.id));
      return;
    }
  }

  const now = nowIso();
  await db.batch([
    db.update(queueItems).set({ status: "processing", updatedAt: now }).where(eq(queueItems.id, item.id)),
    db
      .update(adPublications)
      .set({ processing: true, processingDate: now })
      .where(and(eq(adPublications.adId, item.adId), eq(adPublications.portal, item.portal))),
  ]);

  const ad = await db.select().from(ads).where(eq(ads.id, item.adId)).get();
  if (!ad) return;
  const publication = await db
    .select()
    .from(adPublications)
    .where(and(eq(adPublications.adId, item.adId), eq(adPublications.portal, item.portal)))
    .get();

  try {
    const outcome =
      item.portal === "website"
        ? websiteOutcome(item.action, ad.id)
        : await marketplaceCall(env, item, ad, publication?.remoteAdId ?? 0);
    await finish(env, item, outcome);
  } catch (error) {
    if (error instanceof PortalError && error.kind === "refused") {
      await failItem(db, item.id, error.message);
      return;
    }
    await db.update(queueItems).set({ status: "pending", updatedAt: nowIso() }).where(eq(queueItems.id, item.id));
    throw error;
  }
}

interface Outcome {
  remoteAdId?: number;
  online?: boolean;
  startDate?: string | null;
  closeDate?: string | null;
}

function websiteOutcome(action: string, adId: number): Outcome {
  if (action === "unpublish") return { online: false };
  const start = new Date();
  return {
    remoteAdId: adId,
    online: true,
    startDate: start.toISOString(),
    closeDate: new Date(start.getTime() + WEBSITE_LISTING_DAYS * 86_400_000).toISOString(),
  };
}

async function marketplaceCall(
  env: Env,
  item: typeof queueItems.$inferSelect,
  ad: typeof ads.$inferSelect,
  remoteAdId: number,
): Promise<Outcome> {
  const db = getDb(env.DB);
  const portal = item.portal as MarketplacePortal;
  const listing: Listing = {
    // One listing per placement: a retried item finds its own listing, a new placement makes a new one.
    externalRef: `ad-${ad.id}-${item.id}`,
    title: ad.title,
    description: ad.description,
    price: ad.price,
    images: item.images ? (await listImages(db, ad.id)).map((i) => i.image.url) : [],
  };
  return withAccessToken(db, env, item.userId, portal, async (gateway, token) => {
    switch (item.action) {
      case "publish":
      case "update":
        return remoteAdId ? gateway.updateListing(token, remoteAdId, listing) : gateway.createListing(token, listing);
      case "unpublish":
        if (remoteAdId) await gateway.deleteListing(token, remoteAdId);
        return { online: false };
      case "feature":
        if (!remoteAdId) throw new PortalError("refused", "this advertisement is not published");
        await gateway.buyFeature(token, remoteAdId, item.feature ?? "");
        return {};
    }
  });
}

async function finish(env: Env, item: typeof queueItems.$inferSelect, outcome: Outcome): Promise<void> {
  const db = getDb(env.DB);
  const now = nowIso();
  const done = db
    .update(queueItems)
    .set({ status: "done", reason: null, updatedAt: now })
    .where(eq(queueItems.id, item.id));
  const bump = bumpRevisions(db, [ADS_SCOPE]);
  if (item.action === "feature") {
    await db.batch([
      done,
      db
        .update(adFeatures)
        .set({ pending: false, error: false, active: true, startDate: now })
        .where(
          and(
            eq(adFeatures.adId, item.adId),
            eq(adFeatures.portal, item.portal as MarketplacePortal),
            eq(adFeatures.feature, item.feature ?? ""),
          ),
        ),
      bump,
    ]);
    return;
  }
  const unpublished = item.action === "unpublish";
  await db.batch([
    done,
    db
      .update(adPublications)
      .set({
        pending: false,
        processing: false,
        error: false,
        errorReason: null,
        active: !unpublished,
        online: outcome.online ?? !unpublished,
        clientResult: true,
        ...(outcome.remoteAdId ? { remoteAdId: outcome.remoteAdId } : {}),
        ...(outcome.startDate ? { startDate: outcome.startDate } : {}),
        ...(outcome.closeDate ? { closeDate: outcome.closeDate } : {}),
      })
      .where(and(eq(adPublications.adId, item.adId), eq(adPublications.portal, item.portal))),
    bump,
  ]);
}
