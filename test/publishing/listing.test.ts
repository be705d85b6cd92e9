import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { inWritePaths, marketplaceSimulator, SIMULATOR_ORIGIN } from "../../src/portals/gateway";
import { call, defined, eventually, expectEnvelope, expectError, twoClients } from "../harness/api";
import {
  activate,
  CAR_ATTRIBUTES,
  CAR_CATEGORY,
  contactBody,
  createAd,
  createUser,
  PAID_CATEGORY,
} from "../harness/data";
import { formOf, submitForm } from "../harness/forms";
import { connectedSeller, listingsAtMarketplace, settledPublication, walletBalance } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const ORIGIN = "http://api.test";

describe("the listing a marketplace gets", () => {
  it("carries the whole ad: header and footer, attributes, price model, contact, settings, images in order", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    expectEnvelope(await call("POST", "/user/settings/", { key, body: { userId, allowbids: false } }), 200);
    expectEnvelope(
      await call("POST", "/user/adsettings/", {
        key,
        body: {
          userId,
          settings: [
            {
              portal: "portal_a",
              header: "<p>Welkom bij <b>Fietsen Noord</b></p><script>alert(1)</script>",
              footer: "<p>Bezoek onze showroom</p>",
              allowContactByEmail: false,
            },
            { portal: "portal_b", header: "<p>Alleen portal_b</p>", footer: "" },
          ],
        },
      }),
      200,
    );
    const contact = await call("POST", "/contacts/", { key, body: contactBody(userId) });
    expectEnvelope(contact, 200);
    const ad = await createAd(key, userId, {
      categoryId: PAID_CATEGORY,
      contactId: defined(contact.body.data[0]).contactId,
      title: "Snelle brommer",
      description: "Een <b>zuinige</b> brommer.",
      imagetext: "Nieuw binnen!",
      url: "www.fietsen-noord.example/brommer",
      price: { model: "bidding", price: 90000, minimumBid: 50000, shippingCosts: 2500, retail: 120000 },
      attributes: [
        {
          portal: "portal_a",
          locale: "nl_NL",
          values: [
            { key: "condition", value: "zo goed als nieuw" },
            { key: "delivery", value: "ophalen" },
          ],
        },
        { portal: "portal_b", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
      ],
      settings: [{ portal: "portal_a", showcontact: true, video: "videos.example/brommer.mp4" }],
    });
    const images = await call("PUT", `/images/${ad.adId}`, {
      key,
      body: {
        images: [{ image: { url: "http://images.test/red.png" } }, { image: { url: "http://images.test/blue.jpg" } }],
      },
    });
    expectEnvelope(images, 200);
    const stored = await eventually(async () => {
      const list = (await call("GET", `/images/${ad.adId}`, { key })).body.data.images;
      return Array.isArray(list) && list.length === 2 ? list : undefined;
    }, "the images");

    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    expect(await settledPublication(key, userId, ad.adId)).toMatchObject({ active: true, error: false });

    const [listed] = await listingsAtMarketplace(key, userId);
    expect(defined(listed).listing).toEqual({
      externalRef: expect.any(String),
      categoryId: PAID_CATEGORY,
      title: "Snelle brommer",
      description:
        "<p>Welkom bij <b>Fietsen Noord</b></p><br>Een <b>zuinige</b> brommer.<br><p>Bezoek onze showroom</p>",
      price: { model: "bidding", price: 90000, minimumBid: 50000, shippingCosts: 2500, retailPrice: 120000 },
      attributes: [
        { key: "condition", value: "zo goed als nieuw" },
        { key: "delivery", value: "ophalen" },
      ],
      contact: {
        name: "Showroom Noord",
        address: "Industrieweg 7",
        postalCode: "9711 AA",
        city: "Groningen",
        phone: "050-7654321",
        email: expect.stringContaining("@"),
        website: null,
      },
      allowContactByEmail: false,
      allowbids: false,
      imagetext: "Nieuw binnen!",
      url: "https://www.fietsen-noord.example/brommer",
      video: "https://videos.example/brommer.mp4",
      images: stored.map((image: { image: { url: string } }) => image.image.url),
    });
  });

  it("leaves the contact details out where the ad's showcontact says so, and numbers stay numbers", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const ad = await createAd(key, userId, {
      categoryId: CAR_CATEGORY,
      title: "Volkswagen Golf 1.0 TSI",
      attributes: CAR_ATTRIBUTES,
      settings: [{ portal: "portal_a", showcontact: false }],
    });
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    expect(await settledPublication(key, userId, ad.adId)).toMatchObject({ active: true });
    const [listed] = await listingsAtMarketplace(key, userId);
    expect(defined(defined(listed).listing)).toMatchObject({
      contact: null,
      allowContactByEmail: true,
      allowbids: true,
      // Numbers arrive as numbers, as the ad was given them.
      attributes: CAR_ATTRIBUTES[0]?.values,
    });
  });

  it("refuses before queueing or charging an ad without the attribute set the portal requires", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const car = await createAd(key, userId, {
      categoryId: CAR_CATEGORY,
      title: "Auto zonder gegevens",
      attributes: [],
    });
    // A sofa described for portal_b only: portal_a asks for its condition.
    const partial = await createAd(key, userId, {
      title: "Bank alleen voor portal_b",
      attributes: [{ portal: "portal_b", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] }],
    });
    const before = await walletBalance(key, userId);

    const single = await call("POST", "/publish/", { key, body: { userId, adId: car.adId, portal: "portal_a" } });
    expectError(single, "listing_incomplete");
    expect(single.body.errors).toEqual(
      ["brand", "model", "mileage", "year", "fuel"].map(
        (field) => `portal: portal_a - adId: ${car.adId} - attributes.portal_a.${field}: is required`,
      ),
    );
    const batch = await call("POST", "/publish/batch", {
      key,
      body: { userId, adId: [partial.adId], portal: "portal_a" },
    });
    expect(batch.body.data).toEqual([
      {
        adId: partial.adId,
        result: false,
        errors: [`portal: portal_a - adId: ${partial.adId} - attributes.portal_a.condition: is required`],
        errorDetails: [expect.objectContaining({ code: "listing_incomplete", field: "attributes.portal_a.condition" })],
      },
    ]);
    expect(await walletBalance(key, userId)).toBe(before);
    const jobs = await call("GET", `/jobs/?userId=${userId}`, { key });
    expect(jobs.body.data).toEqual([]);
    expect(await listingsAtMarketplace(key, userId)).toEqual([]);
  });

  it("ends a listing the marketplace refuses for a field in error, with that reason, and refunds it", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    // Our API takes bidding on a car; the marketplace does not offer it in automotive categories.
    const ad = await createAd(key, userId, {
      categoryId: CAR_CATEGORY,
      title: "Volkswagen Polo te bieden",
      attributes: CAR_ATTRIBUTES,
      price: { model: "bidding", price: 500000, minimumBid: 400000 },
    });
    const before = await walletBalance(key, userId);
    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } }), 200);
    const publish = await settledPublication(key, userId, ad.adId);
    expect(publish).toMatchObject({
      active: false,
      error: true,
      errorReason: `price.model: bidding is not offered in category ${CAR_CATEGORY}`,
    });
    // The job names the field a client writes, as the dry run does.
    const [job] = (await call("GET", `/jobs/?userId=${userId}&adId=${ad.adId}`, { key })).body.data;
    expect(job).toMatchObject({
      state: "error",
      lastError: `price.model: bidding is not offered in category ${CAR_CATEGORY}`,
      lastErrorField: "price.model",
    });
    expect(await walletBalance(key, userId)).toBe(before);
    expect(await listingsAtMarketplace(key, userId)).toEqual([]);
  });
});

/** Starts connecting a fresh user to portal_a: the redirect our API hands out and the consent page. */
async function startConnecting() {
  const user = await createUser(key);
  await activate(key, user);
  const started = await call("POST", `/oauth/${user.userId}/portal_a/`, { key });
  expectEnvelope(started, 200);
  const redirect = new URL(started.body.data.redirect);
  const consent = await exports.default.fetch(new Request(redirect));
  return { userId: user.userId as number, redirect, consent, page: await consent.text() };
}

describe("a marketplace's refusal in the API's words", () => {
  it("names the attribute as a client writes it, under its portal; other fields are already the client's paths", () => {
    expect(inWritePaths("portal_a", "attributes.fuel: is required")).toBe("attributes.portal_a.fuel: is required");
    expect(inWritePaths("portal_b", "attributes.condition: is not one of the offered values")).toBe(
      "attributes.portal_b.condition: is not one of the offered values",
    );
    expect(inWritePaths("portal_a", "price.model: bidding is not offered")).toBe("price.model: bidding is not offered");
    expect(inWritePaths("portal_a", "rejected by portal")).toBe("rejected by portal");
  });
});

describe("the simulator's authorization server", () => {
  it("answers a consent page with one form carrying the request, and no code without the password", async () => {
    const { redirect, consent, page } = await startConnecting();
    expect(consent.status).toBe(200);
    expect(consent.headers.get("Content-Type")).toContain("text/html");
    expect(consent.headers.get("Content-Security-Policy")).toContain("frame-ancestors 'none'");
    expect(redirect.searchParams.get("code_challenge_method")).toBe("S256");
    const form = formOf(page);
    expect(form.action).toBe("/simulator/portal_a/oauth/authorize");
    expect(Object.keys(form.fields).sort()).toEqual(
      ["client_id", "code_challenge", "code_challenge_method", "redirect_uri", "response_type", "state"].sort(),
    );
    expect(page).toMatch(/name="username"/);
    expect(page).toMatch(/name="password"/);

    const wrong = await submitForm(ORIGIN, page, { username: "demo", password: "guess" }, "198.51.100.7");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("Location")).toBeNull();
    expect(await wrong.text()).toContain("Wrong username or password");
  });

  it("signs the seeded demo account in with its SIMULATOR_DEMO_PASSWORD and redirects with code and state", async () => {
    const { userId, redirect, page } = await startConnecting();
    const approved = await submitForm(ORIGIN, page, { username: "demo", password: "demo-test-password" });
    expect(approved.status).toBe(302);
    const back = new URL(defined(approved.headers.get("Location")));
    expect(`${back.origin}${back.pathname}`).toBe(`${ORIGIN}/oauth/callback/portal_a`);
    expect(back.searchParams.get("state")).toBe(redirect.searchParams.get("state"));
    const landing = await exports.default.fetch(new Request(back, { headers: { Accept: "text/html" } }));
    expect(await landing.text()).toContain(defined(back.searchParams.get("code")));
    const done = await call("PUT", `/oauth/${userId}/portal_a/`, {
      key,
      body: { code: back.searchParams.get("code"), state: back.searchParams.get("state") },
    });
    expectEnvelope(done, 200);
    expect(done.body.data).toMatchObject({ status: true, externalUserId: 1000 });
  });

  it("limits failed sign-ins per IP address", async () => {
    const { page } = await startConnecting();
    const attempt = () => submitForm(ORIGIN, page, { username: "demo", password: "nope" }, "203.0.113.99");
    for (let i = 0; i < 5; i += 1) expect((await attempt()).status).toBe(401);
    const limited = await attempt();
    expect(limited.status).toBe(429);
    expect(limited.headers.get("Retry-After")).toBe("60");
    // Another address is not affected.
    expect((await submitForm(ORIGIN, page, { username: "demo", password: "nope" }, "203.0.113.100")).status).toBe(401);
  });

  it("never redirects to a redirect URI not registered for our client, nor serves an unknown client", async () => {
    const { redirect } = await startConnecting();
    for (const [name, value] of [
      ["redirect_uri", "https://attacker.example/oauth/callback/portal_a"],
      ["client_id", "someone-else"],
    ] as const) {
      const forged = new URL(redirect);
      forged.searchParams.set(name, value);
      const answer = await exports.default.fetch(new Request(forged, { redirect: "manual" }));
      expect(answer.status).toBe(400);
      expect(answer.headers.get("Location")).toBeNull();
      expect(await answer.text()).toContain(`${name}:`);
      // Posting the forged request with good credentials gives no code either.
      const posted = await exports.default.fetch(
        new Request(new URL(redirect.pathname, ORIGIN), {
          method: "POST",
          body: new URLSearchParams({
            ...Object.fromEntries(forged.searchParams),
            username: "demo",
            password: "demo-test-password",
          }),
          redirect: "manual",
        }),
      );
      expect(posted.status).toBe(400);
      expect(posted.headers.get("Location")).toBeNull();
    }
  });

  it("requires PKCE: a request without a challenge goes back to the client with an error, no code", async () => {
    const { redirect } = await startConnecting();
    const forged = new URL(redirect);
    forged.searchParams.delete("code_challenge");
    const answer = await exports.default.fetch(new Request(forged, { redirect: "manual" }));
    expect(answer.status).toBe(302);
    const back = new URL(defined(answer.headers.get("Location")));
    expect(back.searchParams.get("error")).toBe("invalid_request");
    expect(back.searchParams.get("code")).toBeNull();
  });

  it("gives tokens only to the authenticated client with the PKCE verifier, and each code once", async () => {
    const { redirect, page } = await startConnecting();
    const approved = await submitForm(ORIGIN, page, { username: "demo", password: "demo-test-password" });
    const code = defined(new URL(defined(approved.headers.get("Location"))).searchParams.get("code"));
    const token = (body: Record<string, string>, secret = "test-portal-a-secret") =>
      marketplaceSimulator(env).fetch(
        new Request(`${SIMULATOR_ORIGIN}/portal_a/oauth/token`, {
          method: "POST",
          headers: { Authorization: `Basic ${btoa(`classified-ads-dev:${secret}`)}` },
          body: new URLSearchParams(body),
        }),
      );
    const grant = {
      grant_type: "authorization_code",
      code,
      redirect_uri: defined(redirect.searchParams.get("redirect_uri")),
    };
    expect((await token({ ...grant, code_verifier: "x".repeat(43) }, "wrong-secret")).status).toBe(401);
    // Our own code exchange would hold the verifier; a thief holding only the code is refused (and the code is spent).
    const stolen = await token({ ...grant, code_verifier: "y".repeat(43) });
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toEqual({ error: "invalid_grant" });
  });

  it("takes each code once: the code our user exchanged cannot be exchanged again", async () => {
    const { userId, page } = await startConnecting();
    const approved = await submitForm(ORIGIN, page, { username: "demo", password: "demo-test-password" });
    const back = new URL(defined(approved.headers.get("Location")));
    const body = { code: back.searchParams.get("code"), state: back.searchParams.get("state") };
    expectEnvelope(await call("PUT", `/oauth/${userId}/portal_a/`, { key, body }), 200);
    // Start again (new state and verifier), then try the spent code with the new state.
    const again = await call("POST", `/oauth/${userId}/portal_a/`, { key });
    const state = new URL(again.body.data.redirect).searchParams.get("state");
    expectError(
      await call("PUT", `/oauth/${userId}/portal_a/`, { key, body: { ...body, state } }),
      "oauth_code_refused",
    );
  });

  it("refuses to finish a connection without the state (400 naming it)", async () => {
    const { userId, page } = await startConnecting();
    const approved = await submitForm(ORIGIN, page, { username: "demo", password: "demo-test-password" });
    const back = new URL(defined(approved.headers.get("Location")));
    const answer = await call("PUT", `/oauth/${userId}/portal_a/`, {
      key,
      body: { code: back.searchParams.get("code") },
    });
    expectError(answer, "validation_failed");
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0]).toMatch(/^state: /);
  });
});
