import type { z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { type Db, namedBatches } from "../../db/client";
import { users } from "../../db/schema";
import { DomainError, detail } from "../../lib/errors";
import { nowIso } from "../../lib/time";
import { MARKETPLACES, type Marketplace, PUBLISH_TARGETS, type PublishTarget } from "../../lib/vocabulary";
import { PortalError } from "../../portals/gateway";
import { clientIdOf, isInternal, visibleUsers } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { inMarketplaceShare } from "../shared/laneShare";
import { balanceOf } from "../wallet/wallet";
import { withAccessToken } from "./connections";
import {
  type ConnectionState,
  connectionStateOf,
  type DryVerdict,
  decidePreflight,
  decidePublishing,
  PREFLIGHT_MAX_ADS,
} from "./decide";
import { walkFunds } from "./jobs/funds";
import { assembleListing, listingQueries } from "./listing";
import { REFUSAL_TEXTS, refusal, refused } from "./outcomes";
import { readPublishState } from "./publishRequests";
import type { Preflight, PreflightVerdict as PreflightVerdictSchema } from "./schemas";

/**
 * How long a dry run waits for room in the client's share of the marketplace lane (its reviews take the
 * slots its publish jobs use); a review that found none by then leaves its ad `unverified`.
 */
const VERIFY_PATIENCE_MS = 10_000;
const LANE_BUSY = "the client's share of the marketplace lane stayed busy; ask again shortly";

type PreflightVerdict = z.infer<typeof PreflightVerdictSchema>;
export type PreflightAnswer = z.infer<typeof Preflight>;

/**
 * POST /publish/preflight/: what publishing these ads would do, changing nothing (no job, charge, event,
 * idempotency record or listing). Per target it reads what the real call reads, decides as it does
 * (`decidePublishing`, then `decidePreflight` for open jobs and free updates, and the write's funds rule
 * for the wallet), and asks the
 * marketplace to review each listing it would send (`verifyListing`), with the connection it would use.
 * A marketplace that cannot answer makes the ad `unverified`, never a guess. A meta call walks the
 * targets in the order `/publish/batchall` publishes them, the wallet carried across.
 */
export async function preflightPublishing(
  ctx: ServiceContext,
  input: {
    userId: number;
    adIds: number[] | undefined;
    portal: PublishTarget | "meta";
    images: boolean;
    /** Where the user's connect operation lives (the route knows the API's paths); the portal follows. */
    connectBase: string;
  },
): Promise<PreflightAnswer> {
  if (input.portal === "meta" && !isInternal(ctx.caller))
    throw DomainError.of("internal_only", "portal: meta is for internal clients only");
  const targets = input.portal === "meta" ? PUBLISH_TARGETS : [input.portal];
  const verdicts: PreflightVerdict[] = [];
  let wallet: { payerId: number; balance: number; charged: number } | undefined;
  // What the calls would hold when each is made: a charge the marketplace later refuses is refunded only
  // when its job has run, so a later target's call sees it spent.
  let available = 0;
  for (const portal of targets) {
    const request = {
      adIds: input.adIds ?? ("allActive" as const),
      portal,
      mode: "publish" as const,
      images: input.images,
    };
    const state = await readPublishState(ctx, { ...request, userId: input.userId, jobs: "open" });
    if (!input.adIds && state.ads.size > PREFLIGHT_MAX_ADS)
      throw DomainError.of(
        "validation_failed",
        `adId: the user has ${state.ads.size} active ads; a dry run covers at most ${PREFLIGHT_MAX_ADS}, name them`,
      );
    if (!wallet) {
      const balance = await balanceOf(ctx.db, state.payerId);
      wallet = { payerId: state.payerId, balance, charged: 0 };
      available = balance;
    }
    const priced = decidePreflight(state, portal, decidePublishing(state, request));
    const { verdicts: dry, left } = await walkWallet(ctx.db, portal, priced, available);
    available = left;
    const connection = connectionView(portal, connectionStateOf(portal, state.connection, nowIso()), input);
    const reviewed =
      portal === "website"
        ? dry.map((verdict): Reviewed => ({ verdict }))
        : await askMarketplace(ctx, portal, input, state, dry);
    for (const { verdict, reason, refusedBy } of reviewed) {
      // What the marketplace refuses is charged and refunded by a real call: it stays out of the balance after.
      if (verdict.outcome === "placement" || verdict.outcome === "update" || verdict.outcome === "unverified")
        wallet.charged += verdict.price;
      verdicts.push(verdictView(portal, verdict, connection, { reason, refusedBy }));
    }
  }
  const { payerId = 0, balance = 0, charged = 0 } = wallet ?? {};
  // Another client's payer stays unnamed: what the call would charge is all the caller learns of it. A user
  // who pays for itself was read as visible already, so only a separate payer is looked up.
  if (payerId !== input.userId && !(await mayRead(ctx, payerId)))
    return { wallet: { payer: "another payer", payerId: 0, balance: 0, charged, balanceAfter: 0 }, verdicts };
  return { wallet: { payer: "visible", payerId, balance, charged, balanceAfter: balance - charged }, verdicts };
}

/**
 * The wallet's part of a dry run: the placements and updates among `priced`, in order (free ones too, as
 * the write walks them), walked by the write's funds rule from `balance`; what it does not take is refused
 * for insufficient means, with the balance left before it. Answers the verdicts and what is left.
 */
export async function walkWallet(
  db: Db,
  portal: PublishTarget,
  priced: DryVerdict[],
  balance: number,
): Promise<{ verdicts: DryVerdict[]; left: number }> {
  const paid = (verdict: DryVerdict) => verdict.outcome === "placement" || verdict.outcome === "update";
  const walked = await walkFunds(
    db,
    priced.filter(paid).map((verdict) => verdict.price),
    balance,
  );
  let step = 0;
  const verdicts = priced.map((verdict): DryVerdict => {
    if (!paid(verdict)) return verdict;
    const at = step++;
    if (walked.taken[at]) return verdict;
    const refusal = refused("insufficient_means", portal, verdict.adId, REFUSAL_TEXTS.insufficient_means, {
      price: verdict.price,
      balance: walked.before[at] ?? 0,
    });
    return { adId: verdict.adId, outcome: "refused", price: 0, refusal, ask: false };
  });
  return { verdicts, left: walked.left };
}

/** Whether the caller may see the user (its own client's, or any for an internal client). */
const mayRead = async (ctx: ServiceContext, userId: number) =>
  (await ctx.db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, userId), visibleUsers(ctx.caller)))
    .get()) !== undefined;

/** Where to get consent: the API's connect operation (starting it here would revoke the current token). */
function connectionView(portal: PublishTarget, state: ConnectionState, input: { connectBase: string }) {
  return state === "expired" || state === "missing"
    ? { state, consentUrl: `${input.connectBase}/${portal}/` }
    : { state };
}

interface Reviewed {
  verdict: DryVerdict;
  /** unverified: why the marketplace could not be asked. */
  reason?: string;
  /** refused by the marketplace: its reason, naming the field. */
  refusedBy?: string;
}

/**
 * The marketplace's review of each listing the call would send, within the client's share of the
 * marketplace lane (`inMarketplaceShare`), with the
 * user's access token (renewed first when it ended, as a job would). An ad the API refused, or that an
 * open job answers, is not sent.
 */
async function askMarketplace(
  ctx: ServiceContext,
  portal: Marketplace,
  input: { userId: number; images: boolean },
  state: Awaited<ReturnType<typeof readPublishState>>,
  dry: DryVerdict[],
): Promise<Reviewed[]> {
  const asked = dry.filter((verdict) => verdict.ask);
  if (asked.length === 0) return dry.map((verdict) => ({ verdict }));
  const rows = await namedBatches(
    ctx.db,
    asked.map((verdict) => listingQueries(ctx.db, verdict.adId, input.userId, portal)),
  );
  const listings = await Promise.all(
    asked.map((verdict, i) =>
      assembleListing(rows[i] as NonNullable<(typeof rows)[number]>, {
        ad: state.ads.get(verdict.adId) as NonNullable<ReturnType<typeof state.ads.get>>,
        externalRef: `preflight-${verdict.adId}`,
        withImages: input.images,
        mediaBase: ctx.mediaBase,
      }),
    ),
  );
  const answers = new Map<number, { reason?: string; refusedBy?: string; disconnected?: boolean }>();
  try {
    await withAccessToken(ctx, { userId: input.userId, portal }, async (gateway, token) => {
      await inMarketplaceShare(
        ctx.env,
        clientIdOf(ctx.caller),
        asked.map((verdict, at) => ({ verdict, listing: listings[at] as (typeof listings)[number] })),
        async ({ verdict, listing }) => {
          try {
            await gateway.verifyListing(token, listing);
            answers.set(verdict.adId, {});
          } catch (error) {
            // An ended token is renewed by `withAccessToken`, which then asks again.
            if (error instanceof PortalError && error.kind === "unauthorized") throw error;
            if (error instanceof PortalError && error.kind === "refused")
              answers.set(verdict.adId, { refusedBy: error.message });
            else answers.set(verdict.adId, { reason: error instanceof Error ? error.message : String(error) });
          }
        },
        {
          patienceMs: VERIFY_PATIENCE_MS,
          notRun: ({ verdict }) => answers.set(verdict.adId, { reason: LANE_BUSY }),
        },
      );
    });
  } catch (error) {
    // The connection could not be used after all (its renewal was refused, so it ended).
    const ended = error instanceof PortalError && error.kind !== "transient";
    for (const verdict of asked)
      if (!answers.has(verdict.adId))
        answers.set(
          verdict.adId,
          ended ? { disconnected: true } : { reason: error instanceof Error ? error.message : String(error) },
        );
  }
  return dry.map((verdict): Reviewed => {
    const answer = answers.get(verdict.adId);
    if (!answer) return { verdict };
    if (answer.disconnected) {
      const refusal = refused("portal_not_connected", portal, verdict.adId, REFUSAL_TEXTS.portal_not_connected);
      return { verdict: { ...verdict, outcome: "refused", price: 0, refusal, ask: false } };
    }
    if (answer.refusedBy) return { verdict: { ...verdict, outcome: "refused" }, refusedBy: answer.refusedBy };
    if (answer.reason) return { verdict: { ...verdict, outcome: "unverified" }, reason: answer.reason };
    return { verdict };
  });
}

function verdictView(
  portal: PublishTarget,
  verdict: DryVerdict,
  connection: PreflightVerdict["connection"],
  review: { reason?: string | undefined; refusedBy?: string | undefined },
): PreflightVerdict {
  const base = {
    adId: verdict.adId,
    portal,
    outcome: verdict.outcome,
    connection,
    verifiedByMarketplace: (MARKETPLACES as readonly string[]).includes(portal) && verdict.ask && !review.reason,
  };
  if (review.refusedBy) {
    // The marketplace's reason names its field (`attributes.fuel: is required`), as the job's would.
    const message = refusal(portal, verdict.adId, review.refusedBy);
    const { field } = detail("listing_refused", review.refusedBy);
    return {
      ...base,
      price: 0,
      errors: [message],
      errorDetails: [{ code: "listing_refused", message, ...(field ? { field } : {}) }],
    };
  }
  return {
    ...base,
    price: verdict.outcome === "refused" ? 0 : verdict.price,
    ...(review.reason ? { reason: review.reason } : {}),
    errors: verdict.refusal?.errors ?? [],
    errorDetails: verdict.refusal?.errorDetails ?? [],
  };
}
