import { env } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { sha256Hex } from "../../src/lib/crypto";
import { CATALOGUE_TTL_MS } from "../../src/services/catalogue";
import { claimKey } from "../../src/services/operations";
import { call, eventually, expectError, newClient } from "../harness/api";
import { adBody, createAd, createUser, PAID_CATEGORY, userBody } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

let key: string;
let clientId: number;
let internalKey: string;

beforeAll(async () => {
  ({
    key,
    client: { id: clientId },
  } = await newClient());
  internalKey = (await newClient({ internal: true })).key;
});

afterEach(() => {
  vi.useRealTimers();
});

describe("error codes", () => {
  it("an unauthenticated call says so in errorDetails", async () => {
    expect((await call("GET", "/users/")).body.errorDetails).toEqual([
      { code: "missing_api_key", message: "missing API key: send Authorization: Bearer <key>" },
    ]);
  });

  it("name what was refused: validation, references, keys and tokens", async () => {
    const invalid = expectError(await call("POST", "/users/", { key, body: {} }), "validation_failed");
    expect(invalid[0]?.field).toBeDefined();

    const user = await createUser(key);
    const dangling = await call("POST", "/ads/", { key, body: adBody(user.userId, { contactId: 99_999_999 }) });
    expect(expectError(dangling, "reference_not_found")).toEqual([
      {
        code: "reference_not_found",
        field: "contactId",
        message: `contactId: contact 99999999 not found for user ${user.userId}`,
      },
    ]);

    expectError(await call("GET", "/client/"), "missing_api_key");
    expectError(await call("GET", "/client/", { key: "not-a-key" }), "invalid_api_key");
    expectError(await call("GET", "/ads/?searchportal=meta", { key }), "internal_only");
    expectError(
      await call("POST", "/user/activate/", { key, body: { userId: user.userId, activationtoken: "wrong" } }),
      "invalid_activation_token",
    );
    expectError(
      await call("POST", "/auth/link/validate/", { key, body: { userId: user.userId, accesstoken: "wrong" } }),
      "invalid_login_link",
    );
  });

  it("name what was not found", async () => {
    const user = await createUser(key, { externalUserId: 2 });
    const missing = 99_999_999;
    expectError(await call("GET", `/users/${missing}`, { key }), "user_not_found");
    expectError(await call("DELETE", `/ads/${missing}`, { key }), "ad_not_found");
    expectError(await call("GET", `/contacts/${user.userId}/${missing}`, { key }), "contact_not_found");
    expectError(await call("GET", `/folders/${user.userId}/${missing}`, { key }), "folder_not_found");
    expectError(await call("GET", `/tasks/${user.userId}/portal_a/${missing}`, { key }), "task_not_found");
    expectError(
      await call("PUT", "/manufacturers/", { key, body: { manufacturerId: missing, brands: ["Gazelle"] } }),
      "manufacturer_not_found",
    );
    expectError(await call("GET", `/jobs/${missing}`, { key }), "job_not_found");
    expectError(await call("GET", `/webhooks/${missing}`, { key }), "webhook_not_found");
    const webhook = await call("POST", "/webhooks/", { key, body: { url: "https://hooks.example.com/ads" } });
    expectError(
      await call("POST", `/webhooks/${webhook.body.data.webhookId}/deliveries/${missing}/redeliver`, { key }),
      "delivery_not_found",
    );
    expectError(await call("GET", "http://api.test/media/images/none.jpg"), "image_not_found");
    expectError(await call("GET", "http://api.test/simulator/portal_z/oauth/authorize"), "portal_not_found");
    // A portal configured as "simulator" where no simulator Worker is bound.
    const unbound = { ...env, MARKETPLACE: undefined };
    expectError(
      await call("GET", "http://api.test/simulator/portal_a/oauth/authorize", { env: unbound }),
      "portal_not_found",
    );
    expectError(await call("GET", "/nothing-here", { key }), "route_not_found");
    const wrongMethod = await call("DELETE", "/client/", { key });
    expectError(wrongMethod, "method_not_allowed");
    expect(wrongMethod.headers.get("Allow")).toBe("GET, PATCH");
  });

  it("name conflicts of state: an OAuth flow never started, a request still running", async () => {
    const user = await createUser(key, { externalUserId: 3 });
    expectError(
      await call("PUT", `/oauth/${user.userId}/portal_a/`, { key, body: { code: "c", state: "s" } }),
      "oauth_not_started",
    );

    // The first request with this key is still running (claimed, no answer stored yet).
    const body = JSON.stringify(userBody({ externalUserId: 4 }));
    const fingerprint = await sha256Hex(`POST /rest/v1/users\n${body}`);
    await claimKey(getDb(env.DB), env, clientId, "still-running", fingerprint, new Date());
    const running = await call("POST", "/users/", {
      key,
      rawBody: body,
      headers: { "Content-Type": "application/json", "Idempotency-Key": "still-running" },
    });
    expectError(running, "idempotency_in_progress");
    expect(running.headers.get("Retry-After")).toBe("1");
  });

  it("feature_not_available: a feature the catalogue does not price for the ad's category", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000, { externalUserId: 5 });
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    await call("POST", "/publish/", { key, body: { userId, adId: ad.adId, portal: "portal_a" } });
    await eventually(async () => {
      const status = await call("GET", `/status/${userId}/${ad.adId}`, { key });
      const portalA = status.body.data[0]?.portals.find((p: { portal: string }) => p.portal === "portal_a");
      return portalA?.publish.active ? true : undefined;
    }, "the ad active on portal_a");
    await env.DB.prepare(
      `DELETE FROM category_prices WHERE category_id = ${PAID_CATEGORY} AND portal = 'portal_a' AND action = 'blikvanger'`,
    ).run();
    // The catalogue is cached per isolate; past its lifetime the next call reads the changed prices.
    vi.setSystemTime(Date.now() + CATALOGUE_TTL_MS + 1000);
    expectError(
      await call("POST", "/features/", { key, body: { adId: ad.adId, portal: "portal_a", feature: "url" } }),
      "feature_not_available",
    );
  });
});
