import { and, eq } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { adPublications, ads, userSettings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/time";
import type { Marketplace } from "../../lib/vocabulary";
import type { AdRow } from "../ads/access";
import { loadCatalogue } from "../catalogue/catalogue";
import { type FeatureName, featurePrice } from "../catalogue/features";
import { requireUser } from "../shared/access";
import { type JobContext, jobContextOf, type ServiceContext } from "../shared/context";
import { payerIdOf } from "../wallet/wallet";
import { connectionQuery } from "./connections";
import { decideFeature, isLive, type RetryOf } from "./decide";
import { queueJobs } from "./jobs/queue";
import { type Outcome, queuedOutcome, REFUSAL_TEXTS, refusal, refused } from "./outcomes";

/** POST /features/: a feature for an ad published on the portal, paid when queued. */
export async function requestFeature(
  ctx: ServiceContext,
  input: { adId: number; portal: Marketplace; feature: FeatureName; retry?: RetryOf | undefined },
): Promise<Outcome> {
  const { db } = ctx;
  const notFound = () =>
    new DomainError({
      code: "ad_not_found",
      field: "adId",
      message: refusal(input.portal, input.adId, REFUSAL_TEXTS.ad_not_found),
    });
  const ad = await db.select().from(ads).where(eq(ads.id, input.adId)).get();
  if (!ad) throw notFound();
  await requireUser(db, ctx.caller, ad.userId).catch(() => {
    throw notFound();
  });
  const { outcome } = await queueFeature(jobContextOf(ctx), { ...input, ad });
  return outcome;
}

/**
 * Queues a paid feature for an ad (the features endpoint, scheduled tasks and retries share it) as
 * read → decide → write: one batch read, `decideFeature`, `queueJobs`. Answers what it cost.
 */
export async function queueFeature(
  ctx: JobContext,
  input: { ad: AdRow; portal: Marketplace; feature: FeatureName; retry?: RetryOf | undefined },
): Promise<{ outcome: Outcome; cost: number }> {
  const { db } = ctx;
  const { ad, portal, feature } = input;
  const {
    publication: [publication],
    settings: [settings],
    connection: [connection],
  } = await namedBatch(db, {
    publication: db
      .select({ active: adPublications.active, closeDate: adPublications.closeDate })
      .from(adPublications)
      .where(and(eq(adPublications.adId, ad.id), eq(adPublications.portal, portal))),
    settings: db
      .select({ status: userSettings.status, walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, ad.userId)),
    connection: connectionQuery(db, ad.userId, portal),
  });
  const decision = decideFeature(
    {
      locked: settings?.status === "locked",
      connected: connection?.status ?? false,
      archived: ad.status === "archive",
      live: isLive(publication, nowIso()),
      payerId: payerIdOf(ad.userId, settings?.walletUserId),
      price: featurePrice(await loadCatalogue(db), ad.categoryId, portal, feature)?.total ?? null,
    },
    input,
  );
  if ("refusal" in decision)
    return { outcome: refused(decision.refusal, portal, ad.id, REFUSAL_TEXTS[decision.refusal]), cost: 0 };
  const [queued] = await queueJobs(ctx, [decision.job]);
  if (!queued)
    return { outcome: refused("insufficient_means", portal, ad.id, REFUSAL_TEXTS.insufficient_means), cost: 0 };
  return { outcome: queuedOutcome(portal, ad.id, "feature", queued), cost: queued.created ? queued.cost : 0 };
}
