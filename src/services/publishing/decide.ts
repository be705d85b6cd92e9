import type { adAttributes } from "../../db/schema";
import type { Marketplace, PublishTarget } from "../../lib/vocabulary";
import type { AdRow } from "../ads/access";
import { type AttributeSet, checkAttributes } from "../ads/attributes";
import type { Catalogue } from "../catalogue/catalogue";
import { type FeatureName, placingPrice } from "../catalogue/features";
import type { UserRow } from "../shared/access";
import type { Decision } from "./jobs/queue";
import type { PublishJobRow } from "./jobs/states";
import { type Outcome, type PublishMode, REFUSAL_TEXTS, refused } from "./outcomes";

/**
 * The decisions of publish and feature calls, apart from their reads and writes: pure functions of
 * the state a call read once, returning per ad a refusal or the job to queue. The call then writes
 * what was decided in one go (`queueJobs`), which decides again, in its transaction, only what a
 * concurrent call could have changed meanwhile: whether the listing is live, and the payer's funds.
 */

type AttributeRow = typeof adAttributes.$inferSelect;
export type Refusal = keyof typeof REFUSAL_TEXTS;

/** A retry (POST /jobs/<id>/retry): the failed job it repeats and the marketplace reference it keeps. */
export interface RetryOf {
  retryOf: number;
  externalRef?: string;
}

/** What every charged job needs of the seller and the listing. */
export interface ListingFacts {
  locked: boolean;
  /** The user's connection to the portal can be used (always, for the website). */
  connected: boolean;
  archived: boolean;
  /** The ad is listed (active) on the portal. */
  live: boolean;
}

/**
 * The checks every placement, update and feature makes before anything is queued or charged, in their
 * one order: a fresh call, a retry and a scheduled charge (autoreplace, a scheduled feature) alike.
 * Funds are checked where the charge is written (`queueJobs`).
 */
export function firstRefusal(facts: ListingFacts, needsLive: boolean): Refusal | null {
  if (facts.locked) return "user_locked";
  if (!facts.connected) return "portal_not_connected";
  if (facts.archived) return "ad_archived";
  if (needsLive && !facts.live) return "ad_not_published";
  return null;
}

/**
 * A listing is live while it is active and its close date has not passed: past it the marketplace has
 * ended the listing, so an update cannot bring it back and a publish places it anew (paid, as autoreplace
 * would). Close dates are ISO times, compared as text.
 */
export const isLive = (publication: { active: boolean; closeDate: string | null } | undefined, now: string) =>
  Boolean(publication?.active) && (publication?.closeDate == null || publication.closeDate > now);

/** What a publish call read, once, before deciding. */
export interface PublishState {
  user: UserRow;
  payerId: number;
  locked: boolean;
  connected: boolean;
  catalogue: Catalogue;
  /** The user's ads asked for, in the order read. */
  ads: Map<number, AdRow>;
  /** Ads active on the target: an unpublish takes their listing down, ended or not. */
  active: Set<number>;
  /** Ads live on the target (`isLive`): a publish updates them. */
  live: Set<number>;
  /** Attributes of the ads on the target, per ad in their order. */
  attributes: Map<number, AttributeRow[]>;
  /** The user's connection to the target (none for the website). */
  connection: ConnectionFacts | undefined;
  /** The ads' jobs on the target that the decision needs: pending ones for an unpublish, open ones for a dry run. */
  jobs: PublishJobRow[];
}

export interface PublishRequest {
  adIds: number[] | "all" | "allActive";
  portal: PublishTarget;
  mode: PublishMode;
  images: boolean;
  retry?: RetryOf | undefined;
}

/** Per ad, in the order asked: refused, a job to queue, or (an unpublish of an ad not live) answered by the job it withdraws. */
export type AdDecision =
  | { adId: number; refusal: Outcome }
  | { adId: number; job: Decision }
  | { adId: number; settledByWithdrawal: true };

export interface PublishDecision {
  /** Pending placements, updates and features that an unpublish takes out of the queue (and refunds). */
  withdraw: PublishJobRow[];
  ads: AdDecision[];
}

/**
 * POST/PUT/DELETE /publish/ decided: an unknown ad is refused; an unpublish withdraws the ad's jobs
 * that have not started, and takes a live listing down when the connection allows; a placement or
 * update passes `firstRefusal` (an update needs a live listing), then the marketplace's own review of
 * the listing (`listingProblems`). A placement of a live ad becomes a free update when it is written
 * (`updateIfLive`), unless it retries a placement.
 */
export function decidePublishing(state: PublishState, request: PublishRequest): PublishDecision {
  const { portal, mode, retry } = request;
  const adIds = Array.isArray(request.adIds) ? [...new Set(request.adIds)] : [...state.ads.keys()];
  const withdraw =
    mode === "unpublish" ? state.jobs.filter((job) => job.status === "pending" && job.action !== "unpublish") : [];
  const withdrawable = new Set(withdraw.map((job) => job.adId));
  const refuse = (adId: number, code: Refusal | "listing_incomplete", reason: string | string[] = "") => ({
    adId,
    refusal: refused(code, portal, adId, code === "listing_incomplete" ? reason : REFUSAL_TEXTS[code]),
  });
  const decideAd = (adId: number): AdDecision => {
    const ad = state.ads.get(adId);
    if (!ad) return refuse(adId, "ad_not_found");
    const live = state.live.has(adId);
    const active = state.active.has(adId);
    const job = {
      adId,
      userId: state.user.id,
      portal,
      payerId: state.payerId,
      cost: 0,
      description: "",
      images: false,
    };
    if (mode === "unpublish") {
      // A placement that never happened needs nothing more; an active listing still goes down.
      if (!active)
        return withdrawable.has(adId) ? { adId, settledByWithdrawal: true } : refuse(adId, "ad_not_published");
      if (!state.connected) return refuse(adId, "portal_not_connected");
      return { adId, job: { ...job, action: "unpublish", ...retry } };
    }
    const facts = { locked: state.locked, connected: state.connected, archived: ad.status === "archive", live };
    const refusal = firstRefusal(facts, mode === "update");
    if (refusal) return refuse(adId, refusal);
    const problems =
      portal === "website" ? [] : listingProblems(state.catalogue, state.user, ad, portal, state.attributes.get(adId));
    if (problems.length > 0) return refuse(adId, "listing_incomplete", problems);
    if (mode === "update") return { adId, job: { ...job, action: "update", images: request.images, ...retry } };
    return {
      adId,
      job: {
        ...job,
        action: "publish",
        // Publishing a live ad updates it, free of charge (a retried placement stays a placement).
        updateIfLive: !retry,
        images: request.images,
        cost: placingPrice(state.catalogue, ad.categoryId, portal),
        description: `plaatsen ${portal} adId ${adId}`,
        ...retry,
      },
    };
  };
  return { withdraw, ads: adIds.map(decideAd) };
}

/**
 * What keeps an ad from being listed on a marketplace, as the marketplace would say it, each problem
 * naming its write path (`attributes.<portal>.condition: is required`): each attribute of the portal's
 * set that is missing or no longer valid, with the product-safety keys a marketplace may ask of a
 * business seller without a manufacturer.
 */
export function listingProblems(
  catalogue: Catalogue,
  user: UserRow,
  ad: AdRow,
  portal: Marketplace,
  rows: AttributeRow[] = [],
): string[] {
  if (ad.categoryId === null) return [];
  const gpsrRequired = Boolean(user.companyName) && ad.manufacturerId === null;
  const set: AttributeSet = { portal, locale: "nl_NL", values: rows.map(({ key, value }) => ({ key, value })) };
  return checkAttributes(catalogue, [set], { categoryId: ad.categoryId, mode: "create", gpsrRequired }).problems;
}

/** What a feature purchase read. `price` is the feature's total in cents, null where it is not sold. */
export interface FeatureState extends ListingFacts {
  payerId: number;
  price: number | null;
}

/** POST /features/ (and a scheduled feature) decided: `firstRefusal` with a live listing, then the feature on sale. */
export function decideFeature(
  state: FeatureState,
  request: { ad: AdRow; portal: Marketplace; feature: FeatureName; retry?: RetryOf | undefined },
): { refusal: Refusal } | { job: Decision } {
  const { ad, portal, feature } = request;
  const refusal = firstRefusal(state, true);
  if (refusal) return { refusal };
  if (state.price === null) return { refusal: "feature_not_available" };
  return {
    job: {
      adId: ad.id,
      userId: ad.userId,
      portal,
      action: "feature",
      feature,
      images: false,
      cost: state.price,
      payerId: state.payerId,
      description: `${feature} ${portal} adId ${ad.id}`,
      ...request.retry,
    },
  };
}

/** At most this many ads a dry run: each one is a call to the marketplace (the write's chunk, too). */
export const PREFLIGHT_MAX_ADS = 100;
export const PREFLIGHT_OUTCOMES = ["placement", "update", "queued", "refused", "unverified"] as const;
export type PreflightOutcome = (typeof PREFLIGHT_OUTCOMES)[number];
export const PREFLIGHT_CONNECTION_STATES = ["connected", "refreshable", "expired", "missing", "not_needed"] as const;
export type ConnectionState = (typeof PREFLIGHT_CONNECTION_STATES)[number];

/** What a connection row tells of its state. */
export interface ConnectionFacts {
  status: boolean;
  externalUserId: number | null;
  accessToken: string | null;
  accessTokenExpire: string | null;
  refreshToken: string | null;
}

/**
 * A user's connection to a target: the website needs none; a connection that is on is connected while
 * its access token lasts, then refreshable; one that is off was ended by the marketplace (expired) when
 * it ever held an account, else it was never made or was disconnected (missing).
 */
export function connectionStateOf(
  portal: PublishTarget,
  row: ConnectionFacts | undefined,
  now: string,
): ConnectionState {
  if (portal === "website") return "not_needed";
  if (!row) return "missing";
  if (!row.status) return row.externalUserId === null ? "missing" : "expired";
  if (row.accessToken && row.accessTokenExpire && row.accessTokenExpire > now) return "connected";
  return row.refreshToken ? "refreshable" : "expired";
}

/** One ad's verdict before the marketplace is asked; `ask`: the marketplace reviews it next. */
export interface DryVerdict {
  adId: number;
  outcome: PreflightOutcome;
  price: number;
  refusal?: Outcome;
  ask: boolean;
}

/**
 * What a publish call would do with its decision, as `writePublishDecision` and `queueJobs` do it: a
 * refusal stays; an open job of the same kind answers (no second charge); a placement of a live listing
 * with no unpublish open is a free update. The placements and updates left are priced; whether the wallet
 * covers them is the funds rule's (`walkWallet` in preflight.ts).
 */
export function decidePreflight(state: PublishState, portal: PublishTarget, decision: PublishDecision): DryVerdict[] {
  const open = (adId: number, action: string) =>
    state.jobs.some((job) => job.adId === adId && job.action === action && job.status !== "cancelled");
  return decision.ads.map((d): DryVerdict => {
    if ("refusal" in d) return { adId: d.adId, outcome: "refused", price: 0, refusal: d.refusal, ask: false };
    // (A withdrawal answers an unpublish only; a dry run decides placements.)
    if (!("job" in d)) {
      const refusal = refused("ad_not_published", portal, d.adId, REFUSAL_TEXTS.ad_not_published);
      return { adId: d.adId, outcome: "refused", price: 0, refusal, ask: false };
    }
    const { job } = d;
    const live = state.live.has(d.adId) && !open(d.adId, "unpublish");
    const action = job.action === "publish" && job.updateIfLive && live ? "update" : job.action;
    if (open(d.adId, action)) return { adId: d.adId, outcome: "queued", price: 0, ask: false };
    const price = action === job.action ? job.cost : 0;
    return { adId: d.adId, outcome: action === "update" ? "update" : "placement", price, ask: true };
  });
}
