// POST /syncs/preview: a stock's dry run, changing nothing.
import { eq } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { userSettings } from "../../db/schema";
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { MARKETPLACES, PUBLISH_TARGETS, type PublishTarget } from "../../lib/vocabulary";
import { newAdContent, newAdDefaultsQuery } from "../ads/adChecks";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { connectionQuery } from "../publishing/connections/connection";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { requireUnchanged } from "../shared/fixedFields";
import { balanceOf, payerIdOf } from "../wallet/wallet";
import { endingOf, endingRefusal } from "./endingGuard";
import { itemHash, planItem, syncedAdsOf, targetPlan } from "./plan";
import type { SyncItem, SyncOptions, SyncPlan } from "./schemas";
import { chunksOf, type Stock, withoutRepeats } from "./stockLines";

/** Ads a dry run reads at a time for the targets the ads it ends are on. */
const ENDED_PER_READ = 500;

/**
 * `POST /syncs/preview`: what the sync would do, changing nothing: per item created, updated,
 * unchanged or refused (with the problems a real sync would meet: the item's fields, its category and
 * attributes, a fixed field it would change), the ads it would end, and per target the placements,
 * updates and removals with the placements' prices (a target the user cannot publish to refuses them).
 * A stock is read in chunks, each compared with the user's ads in one D1 round trip.
 */
export async function previewSync(ctx: ServiceContext, input: { options: SyncOptions; stock: Stock }) {
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  const user = await requireUser(db, caller, userId);
  const { defaults, wallet, connections, catalogue } = await previewFacts(db, userId);
  const plan: SyncPlan = {
    userId,
    items: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    ended: 0,
    refused: 0,
    targets: Object.fromEntries(
      PUBLISH_TARGETS.map((portal) => [portal, { place: 0, update: 0, remove: 0, cost: 0 }]),
    ) as SyncPlan["targets"],
    cost: 0,
    balance: await balanceOf(db, payerIdOf(userId, wallet?.walletUserId)),
    wouldRefuse: null,
    refusals: [],
  };
  const seen = new Map<number, number>();
  const inStock = new Set<number>();
  for await (const chunk of chunksOf(input.stock.lines)) {
    const lines = withoutRepeats(chunk, seen);
    plan.items += lines.length;
    for (const line of lines) {
      const externalAdId = line.item ? line.item.externalAdId : line.externalAdId;
      if (externalAdId !== null) inStock.add(externalAdId);
    }
    const known = await syncedAdsOf(
      db,
      userId,
      lines.flatMap((line) => (line.item ? [line.item.externalAdId] : [])),
    );
    for (const line of lines) {
      const refuse = (problems: ErrorDetail[]) => {
        plan.refused += 1;
        plan.refusals.push({
          seq: line.seq,
          externalAdId: line.item ? line.item.externalAdId : line.externalAdId,
          errorDetails: problems,
        });
      };
      if (!line.item) {
        refuse(line.problems);
        continue;
      }
      const ad = known.get(line.item.externalAdId);
      const item = planItem(catalogue, line.item, await itemHash(line.item), ad);
      const problems =
        item.outcome === "unchanged" ? [] : await itemProblems({ catalogue, line: line.item, ad, user, defaults });
      if (problems.length > 0) {
        refuse(problems);
        continue;
      }
      plan[item.outcome] += 1;
      for (const { portal, action, price } of item.targets) {
        const target = plan.targets[portal];
        target[action] += 1;
        if (connections.has(portal)) target.cost += price;
      }
    }
  }
  const { ended, synced } = await endingOf(db, { userId, removal, inStock });
  plan.ended = ended.length;
  plan.wouldRefuse = endingRefusal(ended.length, synced, maxEndedPercent);
  // An ended ad is taken off every target it is on.
  for (let from = 0; from < ended.length; from += ENDED_PER_READ)
    for (const ad of (await syncedAdsOf(db, userId, ended.slice(from, from + ENDED_PER_READ))).values())
      for (const { portal } of targetPlan(catalogue, { wanted: [], categoryId: null, ad, changed: false }))
        plan.targets[portal].remove += 1;
  plan.cost = PUBLISH_TARGETS.reduce((sum, portal) => sum + plan.targets[portal].cost, 0);
  for (const portal of MARKETPLACES)
    if (!connections.has(portal) && plan.targets[portal].place > 0)
      plan.refusals.push({
        seq: 0,
        externalAdId: null,
        errorDetails: [
          detail("portal_not_connected", `targets: the user is not connected to ${portal}; its placements are refused`),
        ],
      });
  return plan;
}

/** What a dry run reads once: the user's defaults, wallet, connected targets and the catalogue. */
async function previewFacts(db: Db, userId: number) {
  const { defaults, wallet, portal_a, portal_b } = await namedBatch(db, {
    defaults: newAdDefaultsQuery(db, userId),
    wallet: db
      .select({ walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, userId)),
    portal_a: connectionQuery(db, userId, "portal_a"),
    portal_b: connectionQuery(db, userId, "portal_b"),
  });
  const connected = { portal_a, portal_b } satisfies Record<(typeof MARKETPLACES)[number], unknown>;
  const connections = new Set<PublishTarget>([
    "website",
    ...MARKETPLACES.filter((portal) => connected[portal][0]?.status),
  ]);
  return { defaults: defaults[0], wallet: wallet[0], connections, catalogue: await loadCatalogue(db) };
}

/** The problems a real sync would meet writing an item: a new ad's checks, and the fields it cannot change. */
async function itemProblems(input: {
  catalogue: Catalogue;
  line: SyncItem;
  ad: { categoryId: number | null } | undefined;
  user: { companyName: string | null };
  defaults: Awaited<ReturnType<typeof previewFacts>>["defaults"];
}): Promise<ErrorDetail[]> {
  const { catalogue, line, ad, user, defaults } = input;
  const { problems } = await newAdContent(catalogue, { user, defaults }, { ...line, userId: 0 });
  if (ad)
    try {
      requireUnchanged({ categoryId: line.categoryId }, { categoryId: ad.categoryId }, ["categoryId"]);
    } catch (error) {
      if (error instanceof DomainError) problems.push(...error.details);
      else throw error;
    }
  return problems;
}
