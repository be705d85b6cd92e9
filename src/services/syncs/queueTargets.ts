// A sync step's calls to its targets: one publish call per target and action for the step's items.
import { DomainError, type ErrorDetail } from "../../lib/errors";
import type { PublishTarget } from "../../lib/vocabulary";
import { requestPublishing } from "../publishing/publishRequests";
import type { ServiceContext } from "../shared/context";
import type { ItemPlan } from "./plan";
import type { SyncTargetResult } from "./schemas";
import type { ItemReport } from "./stockStore";
import type { SyncRow } from "./syncViews";

/** The publish call of each target action. */
export const MODE_OF = { place: "publish", update: "update", remove: "unpublish" } as const;

/** What a step charged: the charges of the jobs it queued itself (never one another call paid). */
export type Charged = { cents: number };

/** The problems of a refused write, or the error itself when it is not a refusal. */
export const refusalOf = (error: unknown): ErrorDetail[] => {
  if (error instanceof DomainError) return error.details;
  throw error;
};

/**
 * Each target's jobs for the items: one publish call per target and action (placements, updates,
 * removals), each item's report per target kept with its job or its refusal, and what each call charged
 * added up (a placement another call queued and paid first, or one that became an update, costs this
 * sync nothing).
 */
export async function queueTargets(
  ctx: ServiceContext,
  input: {
    sync: SyncRow;
    items: { report: ItemReport; adId: number; targets: ItemPlan["targets"] }[];
    charged: Charged;
  },
): Promise<void> {
  const { sync, items, charged } = input;
  type Asked = { target: SyncTargetResult };
  const calls = new Map<string, { portal: PublishTarget; action: keyof typeof MODE_OF; ads: Map<number, Asked> }>();
  for (const { report, adId, targets } of items)
    for (const { portal, action } of targets) {
      const target: SyncTargetResult = { portal, action, jobId: null, refusal: null };
      report.targets.push(target);
      const key = `${portal} ${action}`;
      const call = calls.get(key) ?? { portal, action, ads: new Map<number, Asked>() };
      call.ads.set(adId, { target });
      calls.set(key, call);
    }
  for (const call of calls.values()) {
    const adIds = [...call.ads.keys()];
    const outcomes = await requestPublishing(ctx, {
      userId: sync.userId,
      adIds,
      portal: call.portal,
      mode: MODE_OF[call.action],
      images: true,
      charged: (_adId, cents) => {
        charged.cents += cents;
      },
    }).catch((error: unknown) =>
      adIds.map((adId) => ({ adId, errorDetails: refusalOf(error), queueItemId: undefined })),
    );
    for (const outcome of outcomes) {
      const asked = call.ads.get(outcome.adId);
      if (!asked) continue;
      asked.target.jobId = outcome.queueItemId ?? null;
      asked.target.refusal = outcome.errorDetails[0] ?? null;
    }
  }
}
