import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { Marketplace, PublishTarget } from "../../src/lib/vocabulary";
import { marketplace } from "../fixtures/marketplace";
import { call, eventually, expectEnvelope } from "./api";
import { activate, createAd, createUser } from "./data";
import { submitForm } from "./forms";

let accountSeq = 0;

/** A marketplace account's sign-in at the simulator. */
export interface MarketplaceCredentials {
  username: string;
  password: string;
}

/**
 * Plays the user at the simulator's consent page `redirect` (what POST /oauth/… answered), as a browser
 * would: signed in as `credentials` or, without them, through its "create a new account" link (a fresh
 * marketplace account per user, so tests count listings per account), the form posted. Answers where the
 * marketplace sends the browser back (the API's callback, with the code and state) and the account.
 */
export async function giveConsent(redirect: string, userId: number, credentials?: MarketplaceCredentials) {
  const consent = await exports.default.fetch(new Request(redirect));
  expect(consent.status).toBe(200);
  const consentPage = await consent.text();
  const origin = new URL(redirect).origin;
  accountSeq += 1;
  const account = credentials ?? {
    username: `seller-${userId}-${accountSeq}-${Math.random().toString(36).slice(2, 8)}`,
    password: "secret-password",
  };
  let form = consentPage;
  if (!credentials) {
    const signupHref = /<a id="signup" href="([^"]*)"/.exec(consentPage)?.[1]?.replaceAll("&amp;", "&");
    form = await (await exports.default.fetch(new Request(new URL(signupHref as string, origin)))).text();
  }
  const approval = await submitForm(origin, form, { ...account });
  // Read to its end: an unread body holds one of the six connections a Worker may have open.
  expect(approval.status, await approval.text()).toBe(302);
  return { callback: new URL(approval.headers.get("Location") as string), credentials: account };
}

/**
 * Connects a user to a marketplace through the simulator's OAuth flow, as a browser and a client would
 * (`giveConsent`), the code and state from the redirect sent back with PUT. Answers the API's answer to
 * the code and the credentials of the account.
 */
export async function authorizeAccount(
  key: string,
  userId: number,
  portal: Marketplace,
  credentials?: MarketplaceCredentials,
) {
  const started = await call("POST", `/oauth/${userId}/${portal}/`, { key });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const { callback, credentials: account } = await giveConsent(started.body.data.redirect, userId, credentials);
  const answer = await call("PUT", `/oauth/${userId}/${portal}/`, {
    key,
    body: { code: callback.searchParams.get("code"), state: callback.searchParams.get("state") },
  });
  return { answer, credentials: account };
}

/** Connects a user to a new marketplace account (see `authorizeAccount`); answers the connection. */
export async function connectPortal(key: string, userId: number, portal: Marketplace) {
  const { answer } = await authorizeAccount(key, userId, portal);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** An active user, connected to portal_a, with `credit` cents in the wallet (credited by an internal client). */
export async function connectedSeller(
  key: string,
  internalKey: string,
  credit = 0,
  overrides: Record<string, unknown> = {},
) {
  return (await connectedSellerAccount(key, internalKey, credit, overrides)).userId;
}

/** `connectedSeller`, answering the credentials of its marketplace account as well. */
export async function connectedSellerAccount(
  key: string,
  internalKey: string,
  credit = 0,
  overrides: Record<string, unknown> = {},
) {
  const user = await createUser(key, { companyName: null, ...overrides });
  await activate(key, user);
  const { answer, credentials } = await authorizeAccount(key, user.userId, "portal_a");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  if (credit)
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: credit, description: "opwaardering" },
    });
  return { userId: user.userId as number, credentials };
}

/** The listings the user's account at a portal holds at the simulator, with what arrived. */
export async function listingsAtMarketplace(key: string, userId: number, portal: Marketplace = "portal_a") {
  const connection = await call("GET", `/oauth/${userId}/${portal}/`, { key });
  return marketplace(portal).listings(connection.body.data.externalUserId as number);
}

/** How many ads `publishMixedAds` publishes: a batch of 100 and part of another. */
export const MIXED_ADS = 120;
/** Of them, those the simulator refuses. */
export const MIXED_REFUSED = MIXED_ADS / 10;

/**
 * A seller with `count` paid ads on portal_a published in batches of 100: every tenth from the fourth is
 * refused by the simulator (`[reject]`), every tenth from the eighth fails twice first (`[flaky]`).
 */
export async function publishMixedAds(key: string, internalKey: string, count = MIXED_ADS) {
  const userId = await connectedSeller(key, internalKey, 1_000_000);
  const adIds: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const title = i % 10 === 3 ? `Brommer ${i} [reject]` : i % 10 === 7 ? `Brommer ${i} [flaky]` : `Brommer ${i}`;
    adIds.push((await createAd(key, userId, { categoryId: 9204, title, externalAdId: i })).adId);
  }
  for (let i = 0; i < adIds.length; i += 100)
    await call("POST", "/publish/batch", { key, body: { userId, adId: adIds.slice(i, i + 100), portal: "portal_a" } });
  return { userId, adIds };
}

/** The wallet balance of a user, in cents. */
export const walletBalance = async (key: string, userId: number) =>
  (await call("GET", `/wallet/${userId}`, { key })).body.data.balance as number;

/** The publish status of an ad on a portal, as GET /status/ shows it. */
export const publicationOf = async (key: string, userId: number, adId: number, portal = "portal_a") => {
  const answer = await call("GET", `/status/${userId}/${adId}`, { key });
  return answer.body.data[0]?.portals.find((p: { portal: string }) => p.portal === portal)?.publish;
};

/** The publish status once the ad's job on the portal is neither pending nor processing. */
export const settledPublication = (key: string, userId: number, adId: number, portal = "portal_a") =>
  eventually(async () => {
    const publish = await publicationOf(key, userId, adId, portal);
    return publish?.pending || publish?.processing ? undefined : publish;
  }, `ad ${adId} on ${portal} to settle`);

/** Milliseconds from a publish (to the website, or a marketplace the user is connected to) to its listing live, as the client sees it. */
export async function publicationTime(apiKey: string, userId: number, portal: PublishTarget = "website") {
  const ad = await createAd(apiKey, userId);
  const started = Date.now();
  expectEnvelope(await call("POST", "/publish/", { key: apiKey, body: { userId, adId: ad.adId, portal } }), 200);
  const publish = await settledPublication(apiKey, userId, ad.adId, portal);
  expect(publish?.active).toBe(true);
  return Date.now() - started;
}
