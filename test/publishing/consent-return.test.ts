// A way home after consent: a client registers its return origins (PATCH /client/), starts consent with a
// returnUrl on one of them, and the user comes back there connected (or with the error), the code
// exchanged inside the API. No other URL is accepted: no open redirect.
import { createExecutionContext, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { call, defined, expectEnvelope, expectError, newClient } from "../harness/api";
import { activate, createUser } from "../harness/data";
import { giveConsent } from "../harness/marketplace";

const ERP = "https://erp.example.com";

/** The callback the marketplace sent the browser to, followed as the browser would (no redirect followed). */
const followCallback = async (callback: URL) => exports.default.fetch(new Request(callback, { redirect: "manual" }));

async function activeUser(key: string) {
  const user = await createUser(key);
  await activate(key, user);
  return user.userId as number;
}

describe("return origins", () => {
  it("are registered with PATCH /client/, shown by GET /client/, and what GET shows can be sent back", async () => {
    const own = (await newClient({ partner: true })).key;
    expect((await call("GET", "/client/", { key: own })).body.data.returnOrigins).toEqual([]);
    const set = await call("PATCH", "/client/", { key: own, body: { returnOrigins: [ERP, "http://localhost:9000"] } });
    expectEnvelope(set, 200);
    expect(set.body.data.returnOrigins).toEqual([ERP, "http://localhost:9000"]);
    const read = await call("GET", "/client/", { key: own });
    expectEnvelope(await call("PATCH", "/client/", { key: own, body: read.body.data }), 200);
    for (const origin of ["https://erp.example.com/path", "http://erp.example.com", "erp.example.com"]) {
      const refused = await call("PATCH", "/client/", { key: own, body: { returnOrigins: [origin] } });
      expectError(refused, "validation_failed");
      expect(refused.body.errors[0]).toMatch(/^returnOrigins\[0\]: must be an origin/);
    }
    // An origin is at most a 253-character host name with a port: a longer entry is refused by its length.
    const longest = `https://${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}:65535`;
    expectEnvelope(await call("PATCH", "/client/", { key: own, body: { returnOrigins: [longest] } }), 200);
    const over = await call("PATCH", "/client/", {
      key: own,
      body: { returnOrigins: [`https://${"e".repeat(10_000)}.nl`] },
    });
    expectError(over, "validation_failed");
    expect(over.body.errorDetails?.[0]?.field).toBe("returnOrigins[0]");
    expectEnvelope(
      await call("PATCH", "/client/", { key: own, body: { returnOrigins: [ERP, "http://localhost:9000"] } }),
      200,
    );
    expect((await call("GET", "/client/", { key: own })).body.data.returnOrigins).toEqual([
      ERP,
      "http://localhost:9000",
    ]);
  });
});

// The callback carries no key: it finds the authorization on the shard of the user its state names.
describe.each([1, 2])("consent with a returnUrl, for a client on shard %i", (shard) => {
  let key: string;
  beforeAll(async () => {
    key = (await newClient({ partner: true, shard })).key;
    expectEnvelope(await call("PATCH", "/client/", { key, body: { returnOrigins: [ERP] } }), 200);
  });

  it("sends the user back connected, the code exchanged inside the API", async () => {
    const userId = await activeUser(key);
    const started = await call("POST", `/oauth/${userId}/portal_a/`, {
      key,
      body: { returnUrl: `${ERP}/dealers/7/connected?tab=portals` },
    });
    expectEnvelope(started, 200);
    const { callback } = await giveConsent(started.body.data.redirect, userId);
    const landed = await followCallback(callback);
    expect(landed.status).toBe(302);
    const back = new URL(defined(landed.headers.get("Location")));
    expect(back.origin + back.pathname).toBe(`${ERP}/dealers/7/connected`);
    expect(Object.fromEntries(back.searchParams)).toEqual({
      tab: "portals",
      portal: "portal_a",
      userId: String(userId),
      status: "connected",
    });
    expect((await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data).toMatchObject({ status: true });
    // The authorization is finished: its code cannot be used again.
    const again = await call("PUT", `/oauth/${userId}/portal_a/`, {
      key,
      body: { code: callback.searchParams.get("code"), state: callback.searchParams.get("state") },
    });
    expectError(again, "oauth_not_started");
  });

  it("sends the user back with the error when consent is refused, and a new consent can start", async () => {
    const userId = await activeUser(key);
    const started = await call("POST", `/oauth/${userId}/portal_a/`, { key, body: { returnUrl: `${ERP}/back` } });
    const state = defined(new URL(started.body.data.redirect).searchParams.get("state"));
    const refused = await followCallback(
      new URL(`http://api.test/oauth/callback/portal_a?error=access_denied&state=${state}`),
    );
    expect(refused.status).toBe(302);
    const back = new URL(defined(refused.headers.get("Location")));
    expect(back.searchParams.get("status")).toBe("error");
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect((await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data).toMatchObject({ status: false });
    // A code sent with a state that no longer waits is not exchanged: the callback shows its page.
    const stale = await followCallback(new URL(`http://api.test/oauth/callback/portal_a?code=x&state=${state}`));
    expect(stale.status).toBe(200);
    expectEnvelope(await call("POST", `/oauth/${userId}/portal_a/`, { key, body: { returnUrl: `${ERP}/back` } }), 200);
  });

  it("sends the user back with temporarily_unavailable when the marketplace cannot take the code", async () => {
    const userId = await activeUser(key);
    const started = await call("POST", `/oauth/${userId}/portal_a/`, { key, body: { returnUrl: `${ERP}/back` } });
    const { callback } = await giveConsent(started.body.data.redirect, userId);
    // The marketplace's token endpoint is down; everything else of it answers.
    const marketplace = defined(env.MARKETPLACE);
    const tokenDown = {
      fetch: (input: RequestInfo | URL, init?: RequestInit) =>
        new Request(input, init).url.endsWith("/oauth/token")
          ? Promise.resolve(new Response("unavailable", { status: 503 }))
          : marketplace.fetch(input, init),
    } as Fetcher;
    const landed = await worker.fetch(
      new Request(callback, { redirect: "manual" }) as Parameters<typeof worker.fetch>[0],
      { ...env, MARKETPLACE: tokenDown } as Env,
      createExecutionContext(),
    );
    expect(landed.status).toBe(302);
    const back = new URL(defined(landed.headers.get("Location")));
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ status: "error", error: "temporarily_unavailable" });
    expect((await call("GET", `/oauth/${userId}/portal_a/`, { key })).body.data).toMatchObject({ status: false });
  });

  it("refuses a returnUrl on an origin the client did not register, and another client's", async () => {
    const userId = await activeUser(key);
    for (const returnUrl of [
      "https://evil.example/steal",
      "https://erp.example.com.evil.example/",
      "javascript:alert(1)",
    ]) {
      const refused = await call("POST", `/oauth/${userId}/portal_a/`, { key, body: { returnUrl } });
      expectError(refused, "validation_failed");
      expect(refused.body.errors[0]).toMatch(/^returnUrl: /);
    }
    const other = (await newClient({ partner: true })).key;
    const { userId: theirs } = await createUser(other);
    const notTheirs = await call("POST", `/oauth/${theirs}/portal_a/`, { key: other, body: { returnUrl: `${ERP}/x` } });
    expectError(notTheirs, "validation_failed");
  });

  it("without a body, lands on the API's page with the code, as the contract's call does", async () => {
    const userId = await activeUser(key);
    // An empty body sent as JSON is the same call.
    const empty = { "Content-Type": "application/json" };
    expectEnvelope(await call("POST", `/oauth/${userId}/portal_a/`, { key, headers: empty, rawBody: "" }), 200);
    expectError(
      await call("POST", `/oauth/${userId}/portal_a/`, { key, headers: empty, rawBody: "{" }),
      "malformed_body",
    );
    const started = await call("POST", `/oauth/${userId}/portal_a/`, { key });
    expectEnvelope(started, 200);
    const { callback } = await giveConsent(started.body.data.redirect, userId);
    const landed = await followCallback(callback);
    expect(landed.status).toBe(200);
    const body = await landed.json<{ data: { code: string } }>();
    expect(body.data.code).toBe(callback.searchParams.get("code"));
  });
});
