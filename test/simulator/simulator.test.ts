// The marketplace simulator on its own: a Worker of its own (simulator/), spoken to over HTTP exactly
// as the API's gateway speaks to it, reviewing listings with its own rules and its own catalogue.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type Listing, marketplaceSimulator, SIMULATOR_ORIGIN } from "../../src/portals/gateway";
import { defined } from "../harness/api";
import { CAR_ATTRIBUTES, CAR_CATEGORY } from "../harness/data";

const API_ORIGIN = "http://api.test";
const PORTAL = "portal_a";

const marketplace = (path: string, init?: RequestInit) =>
  marketplaceSimulator(env).fetch(`${SIMULATOR_ORIGIN}/${PORTAL}/${path}`, init);

const base64url = (bytes: ArrayBuffer) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

/** A fresh account and its access token, by the marketplace's own OAuth flow (sign-up, code with PKCE, token). */
async function signedUp(): Promise<{ token: string; account: number }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)).buffer);
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const redirectUri = `${API_ORIGIN}/oauth/callback/${PORTAL}`;
  const signup = await marketplace("signup", {
    method: "POST",
    headers: { "X-Simulator-Origin": API_ORIGIN },
    body: new URLSearchParams({
      response_type: "code",
      client_id: "classified-ads-dev",
      redirect_uri: redirectUri,
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
      username: `rules-${crypto.randomUUID().slice(0, 8)}`,
      password: "secret-password",
    }),
    redirect: "manual",
  });
  expect(signup.status, await signup.text()).toBe(302);
  const code = defined(new URL(defined(signup.headers.get("Location"))).searchParams.get("code"));
  const token = await marketplace("oauth/token", {
    method: "POST",
    headers: { Authorization: `Basic ${btoa("classified-ads-dev:test-portal-a-secret")}` },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }),
  });
  expect(token.status).toBe(200);
  const answer = (await token.json()) as { access_token: string; account: { id: number } };
  return { token: answer.access_token, account: answer.account.id };
}

const accessToken = async () => (await signedUp()).token;

const aCar = (changes: Partial<Listing> = {}): Listing => ({
  externalRef: `ref-${crypto.randomUUID()}`,
  categoryId: CAR_CATEGORY,
  title: "Volkswagen Golf 1.4 TSI",
  description: "<p>Nette auto, dealer onderhouden.</p>",
  price: { model: "fixed", price: 1_295_000, minimumBid: null, shippingCosts: null, retailPrice: null },
  attributes: defined(CAR_ATTRIBUTES[0]).values,
  contact: null,
  allowContactByEmail: true,
  allowbids: false,
  imagetext: null,
  url: null,
  video: null,
  images: [],
  ...changes,
});

const post = async (token: string, body: unknown) => {
  const answer = await marketplace("listings", {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: answer.status, body: (await answer.json()) as { error?: string; remoteAdId?: number } };
};

describe("the marketplace simulator's own rules", () => {
  it("takes a good listing once per reference: the same reference again answers the listing made first", async () => {
    const token = await accessToken();
    const listing = aCar();
    const first = await post(token, listing);
    expect(first.status).toBe(201);
    const again = await post(token, listing);
    expect(again).toEqual({ status: 200, body: expect.objectContaining({ remoteAdId: first.body.remoteAdId }) });
  });

  it.each([
    [
      "an attribute outside its published range",
      {
        attributes: [
          ...aCar().attributes.slice(0, 2),
          { key: "mileage", value: 9_000_000 },
          ...aCar().attributes.slice(3),
        ],
      },
      "attributes.mileage: is outside 0..2000000",
    ],
    [
      "a value the catalogue does not offer",
      { attributes: aCar().attributes.map((a) => (a.key === "fuel" ? { ...a, value: "steam" } : a)) },
      "attributes.fuel: is not one of the offered values",
    ],
    [
      "a mandatory attribute missing",
      { attributes: aCar().attributes.filter((a) => a.key !== "brand") },
      "attributes.brand: is required",
    ],
    [
      "an attribute the category does not take",
      { attributes: [...aCar().attributes, { key: "frameSize", value: 54 }] },
      "attributes.frameSize: not taken in this category",
    ],
    ["a category it does not have", { categoryId: 1 }, "categoryId: 1 is not a category of portal_a"],
    [
      "bidding on a vehicle",
      { price: { ...aCar().price, model: "bidding", minimumBid: 1_000_000 } },
      `price.model: bidding is not offered in category ${CAR_CATEGORY}`,
    ],
    ["an image that is not an absolute URL", { images: ["/media/1.jpg"] }, "images.0: must be an absolute http(s) URL"],
  ] as const)("refuses %s with 422 naming the field", async (_, changes, error) => {
    const token = await accessToken();
    expect(await post(token, aCar(changes as Partial<Listing>))).toEqual({ status: 422, body: { error } });
  });

  it("refuses a field its API does not define, so a gateway sending one finds out", async () => {
    const token = await accessToken();
    const answer = await post(token, { ...aCar(), sellerNotes: "not in the marketplace's API" });
    expect(answer.status).toBe(422);
    expect(answer.body.error).toMatch(/sellerNotes/);
  });

  it("answers 401 without a token and 404 for a portal it does not play", async () => {
    expect((await post("not-a-token", aCar())).status).toBe(401);
    const unknown = await marketplaceSimulator(env).fetch(`${SIMULATOR_ORIGIN}/portal_z/listings`);
    expect(unknown.status).toBe(404);
    await unknown.body?.cancel();
  });
});

describe("the simulator's accounts and fault modes", () => {
  const send = async (token: string, method: string, path: string, body?: unknown) => {
    const answer = await marketplace(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  const listedBy = async (token: string) => {
    const listing = await post(token, aCar());
    const held = await send(token, "GET", `listings/${listing.body.remoteAdId}`);
    expect(held.status).toBe(200);
    return listing.body.remoteAdId as number;
  };

  it("finds no other account's listing: update, delete, feature and read answer 404, and the listing stays online", async () => {
    const owner = await accessToken();
    const other = await accessToken();
    const id = await listedBy(owner);
    for (const [method, path, body] of [
      ["PUT", `listings/${id}`, aCar()],
      ["DELETE", `listings/${id}`, undefined],
      ["GET", `listings/${id}`, undefined],
      ["GET", `listings/${id}/features`, undefined],
    ] as const)
      expect((await send(other, method, path, body)).status, `${method} ${path}`).toBe(404);
    expect((await send(owner, "GET", `listings/${id}`)).body.online).toBe(true);
  });

  it("looks a feature purchase up by its reference", async () => {
    const token = await accessToken();
    const id = await listedBy(token);
    const bought = await send(token, "POST", `listings/${id}/features`, { feature: "url", reference: "ref-f-1" });
    expect(bought.status).toBe(200);
    expect((await send(token, "GET", `listings/${id}/features?reference=ref-f-1`)).body.features).toHaveLength(1);
    expect((await send(token, "GET", `listings/${id}/features?reference=ref-f-2`)).body.features).toEqual([]);
  });

  it("commits a write and then fails its answer while a fault is switched on, and refuses an unknown mode", async () => {
    const faults = (account: number, body: unknown) =>
      marketplace(`control/accounts/${account}/faults`, {
        method: "POST",
        headers: {
          Authorization: `Basic ${btoa("classified-ads-dev:test-portal-a-secret")}`,
          "Content-Type": "application/json",
        },
        body: JSON.stringify(body),
      });
    const { token, account } = await signedUp();
    const bad = await faults(account, { mode: "explode" });
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
    const on = await faults(account, { mode: "commit-then-422", times: 1 });
    expect(on.status).toBe(204);
    const listing = aCar();
    expect((await post(token, listing)).status).toBe(422);
    const found = await send(token, "GET", `listings?externalRef=${listing.externalRef}`);
    expect(found.body.listings).toHaveLength(1);
    // One time only: the next write is answered as it is.
    expect((await post(token, aCar())).status).toBe(201);
  });
});
