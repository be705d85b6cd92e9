import { and, eq, inArray, isNotNull, ne } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { inIds, inList } from "../../db/inList";
import { adPublications, ads, publishJobs, type SYNC_REMOVALS, type SyncOutcome } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { nowIso } from "../../lib/time";
import { PUBLISH_TARGETS, type PublishTarget } from "../../lib/vocabulary";
import type { Catalogue } from "../catalogue/catalogue";
import { placingPrice } from "../catalogue/features";
import { isLive } from "../publishing/decide";
import type { SyncItem } from "./schemas";

type SyncRemoval = (typeof SYNC_REMOVALS)[number];

/** What one target does for an item: placed, updated where it is live, or taken off. */
export type TargetAction = "place" | "update" | "remove";

/** An ad of the user that a stock's item names, as a sync compares it. */
export interface SyncedAd {
  id: number;
  externalAdId: number;
  categoryId: number | null;
  status: string;
  /** The item's content as the latest sync wrote it, when no other call wrote the ad since. */
  syncedHash: string | null;
  /** The hash the latest sync stored, whatever wrote the ad since (its images part tells whether they changed). */
  storedHash: string | null;
  /** Per target: whether it is listed (active, and live), and its open jobs by action. */
  targets: Map<PublishTarget, { active: boolean; live: boolean; open: Map<string, number> }>;
}

/** What a sync does with one item: its outcome, and each target's action (with a placement's price). */
export interface ItemPlan {
  outcome: Extract<SyncOutcome, "created" | "updated" | "unchanged">;
  ad: SyncedAd | undefined;
  targets: { portal: PublishTarget; action: TargetAction; price: number }[];
}

/** An item's content, canonical (keys in order at every depth), so equal items hash equal. */
const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : value && typeof value === "object"
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([, field]) => field !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([key, field]) => [key, canonical(field)]),
        )
      : value;

/** SHA-256 of a value's canonical JSON, in 128 bits (hex). */
const digestOf = async (value: unknown) => (await sha256Hex(JSON.stringify(canonical(value)))).slice(0, 32);

/**
 * What an ad stores of the item a sync wrote it from: the hash of its content (targets apart: those are
 * compared with the listings), then the hash of its images alone, so an update knows whether to replace them.
 */
export const itemHash = async ({ targets: _targets, ...content }: SyncItem) =>
  `${await digestOf(content)}:${await digestOf(content.images)}`;

/** Whether two item hashes (`itemHash`) have the same images. */
export const sameImages = (hash: string, earlier: string | null) => earlier?.split(":")[1] === hash.split(":")[1];

/**
 * The user's ads that the items name by `externalAdId`, with their listings and open jobs, in one D1
 * round trip. A user with two ads of one externalAdId (made by `POST /ads/`) syncs the older one.
 */
export async function syncedAdsOf(db: Db, userId: number, externalAdIds: number[]): Promise<Map<number, SyncedAd>> {
  const named = and(eq(ads.userId, userId), inList(ads.externalAdId, externalAdIds));
  const adIds = db.select({ id: ads.id }).from(ads).where(named);
  const { adRows, publications, jobs } = await namedBatch(db, {
    adRows: db
      .select({
        id: ads.id,
        externalAdId: ads.externalAdId,
        categoryId: ads.categoryId,
        status: ads.status,
        syncHash: ads.syncHash,
        syncedAt: ads.syncedAt,
        updatedAt: ads.updatedAt,
      })
      .from(ads)
      .where(named)
      .orderBy(ads.id),
    publications: db
      .select({
        adId: adPublications.adId,
        portal: adPublications.portal,
        active: adPublications.active,
        closeDate: adPublications.closeDate,
      })
      .from(adPublications)
      .where(inIds(adPublications.adId, adIds)),
    jobs: db
      .select({ id: publishJobs.id, adId: publishJobs.adId, portal: publishJobs.portal, action: publishJobs.action })
      .from(publishJobs)
      .where(
        and(
          inIds(publishJobs.adId, adIds),
          inArray(publishJobs.status, ["pending", "processing"]),
          ne(publishJobs.action, "feature"),
        ),
      ),
  });
  const now = nowIso();
  const byId = new Map<number, SyncedAd>();
  const byExternal = new Map<number, SyncedAd>();
  for (const row of adRows) {
    if (row.externalAdId === null || byExternal.has(row.externalAdId)) continue;
    const ad: SyncedAd = {
      id: row.id,
      externalAdId: row.externalAdId,
      categoryId: row.categoryId,
      status: row.status,
      syncedHash: row.syncedAt !== null && row.syncedAt === row.updatedAt ? row.syncHash : null,
      storedHash: row.syncHash,
      targets: new Map(PUBLISH_TARGETS.map((portal) => [portal, { active: false, live: false, open: new Map() }])),
    };
    byId.set(ad.id, ad);
    byExternal.set(ad.externalAdId, ad);
  }
  for (const publication of publications) {
    const target = byId.get(publication.adId)?.targets.get(publication.portal as PublishTarget);
    if (!target) continue;
    target.active = publication.active;
    target.live = isLive(publication, now);
  }
  for (const job of jobs) byId.get(job.adId)?.targets.get(job.portal)?.open.set(job.action, job.id);
  return byExternal;
}

/**
 * What syncing an item does, from its ad as read (`syncedAdsOf`): a new item is created, an item whose
 * content differs from what the latest sync wrote (or whose ad another call wrote since) is updated, and
 * the rest is unchanged. Each target the item names is placed where the ad is neither live nor being
 * placed, and updated where it is live and the content changed (a placement under way sends the newest
 * content itself); each target it does not name is taken off where the ad is listed or being placed.
 * An unchanged item on the targets it names plans nothing: no write, no job, no charge.
 */
export function planItem(catalogue: Catalogue, item: SyncItem, hash: string, ad: SyncedAd | undefined): ItemPlan {
  const outcome = !ad ? "created" : ad.syncedHash === hash ? "unchanged" : "updated";
  return {
    outcome,
    ad,
    targets: targetPlan(catalogue, {
      wanted: item.targets,
      categoryId: item.categoryId,
      ad,
      changed: outcome !== "unchanged",
    }),
  };
}

/** Each target's action for an ad that should be on `wanted` (an ended ad: on none). */
export function targetPlan(
  catalogue: Catalogue,
  input: { wanted: readonly PublishTarget[]; categoryId: number | null; ad: SyncedAd | undefined; changed: boolean },
): ItemPlan["targets"] {
  const targets: ItemPlan["targets"] = [];
  for (const portal of PUBLISH_TARGETS) {
    const state = input.ad?.targets.get(portal);
    const placing = Boolean(state?.open.has("publish"));
    const leaving = Boolean(state?.open.has("unpublish"));
    if (input.wanted.includes(portal)) {
      if (!state || leaving || !(state.live || placing))
        targets.push({ portal, action: "place", price: placingPrice(catalogue, input.categoryId, portal) });
      else if (input.changed && state.live) targets.push({ portal, action: "update", price: 0 });
    } else if (state && !leaving && (state.active || placing)) targets.push({ portal, action: "remove", price: 0 });
  }
  return targets;
}

/**
 * The user's synced ads: those with an externalAdId (an ad a sync archived stays archived without being
 * ended again, when the sync archives what it ends).
 */
export const syncedAdsWhere = (userId: number, removal: SyncRemoval) =>
  and(
    eq(ads.userId, userId),
    isNotNull(ads.externalAdId),
    removal === "archive" ? ne(ads.status, "archive") : undefined,
  );
