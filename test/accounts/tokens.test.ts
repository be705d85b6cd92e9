import { env, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { userTokens } from "../../src/durable/UserTokens";
import { ACTIVATION_GENERATION_LIMIT, LOGIN_LINK_TTL_MS } from "../../src/services/accounts";
import { call, expectEnvelope, expectError, newClient } from "../harness/api";
import { createUser } from "../harness/data";

let key: string;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
});

describe("activation", () => {
  it("activates a user with the token of its creation, once", async () => {
    const user = await createUser(key);
    const token = user.activation.activationtoken;
    const answer = await call("POST", "/user/activate/", {
      key,
      body: { userId: user.userId, activationtoken: token },
    });
    expectEnvelope(answer, 200);
    expect(answer.body.data).toEqual([]);
    expect((await call("GET", `/user/settings/${user.userId}`, { key })).body.data.status).toBe("active");

    const again = await call("POST", "/user/activate/", { key, body: { userId: user.userId, activationtoken: token } });
    expectEnvelope(again, 400);
    expect(again.body.errors).toEqual(["invalid activationtoken or token expired"]);
  });

  it("revokes earlier tokens when a new one is generated, and refuses unknown tokens", async () => {
    const user = await createUser(key);
    const generated = await call("POST", "/user/activate/generate/", { key, body: { userId: user.userId } });
    expectEnvelope(generated, 200);
    expect(generated.body.data).toMatchObject({ userId: user.userId, activationtoken: expect.any(String) });
    expect(generated.body.data.activationtoken).not.toBe(user.activation.activationtoken);

    for (const activationtoken of [user.activation.activationtoken, "made-up-token"]) {
      const refused = await call("POST", "/user/activate/", { key, body: { userId: user.userId, activationtoken } });
      expectEnvelope(refused, 400);
      expect(refused.body.errors).toEqual(["invalid activationtoken or token expired"]);
    }
    expect((await call("GET", `/user/settings/${user.userId}`, { key })).body.data.status).toBe("locked");
    const used = await call("POST", "/user/activate/", {
      key,
      body: { userId: user.userId, activationtoken: generated.body.data.activationtoken },
    });
    expectEnvelope(used, 200);
  });

  it("allows 5 generations per hour and answers the spec's message on the sixth", async () => {
    const user = await createUser(key);
    for (let i = 0; i < 5; i += 1) {
      expectEnvelope(await call("POST", "/user/activate/generate/", { key, body: { userId: user.userId } }), 200);
    }
    const sixth = await call("POST", "/user/activate/generate/", { key, body: { userId: user.userId } });
    expectError(sixth, "activation_limit_reached");
    expect(sixth.body.errors).toEqual(["maximum number of requests has exceeded. please try again later..."]);
  });

  it("counts generations over a rolling hour (fixed clock) and expires tokens", async () => {
    const stub = userTokens(env.USER_TOKENS, 424242);
    // Two hours ago: recent enough that the purge alarm (a day after expiry) leaves the tokens alone.
    const t0 = Date.now() - 2 * 3_600_000;
    const minute = 60_000;
    for (let i = 0; i < 5; i += 1) {
      expect((await stub.issue("activation", 10 * minute, t0 + i * minute, ACTIVATION_GENERATION_LIMIT)).issued).toBe(
        true,
      );
    }
    expect(await stub.issue("activation", 10 * minute, t0 + 30 * minute, ACTIVATION_GENERATION_LIMIT)).toEqual({
      issued: false,
      reason: "limited",
    });
    // The first generation leaves the window exactly one hour after it was made.
    expect(
      await stub.issue("activation", 10 * minute, t0 + 60 * minute - 1, ACTIVATION_GENERATION_LIMIT),
    ).toMatchObject({ issued: false });
    const fresh = await stub.issue("activation", 10 * minute, t0 + 60 * minute, ACTIVATION_GENERATION_LIMIT);
    expect(fresh.issued).toBe(true);
    if (!fresh.issued) return;
    expect(await stub.redeem("activation", fresh.token, t0 + 70 * minute)).toEqual({ ok: false, reason: "expired" });

    await runInDurableObject(stub, async (_instance, state) => {
      const stored = state.storage.sql.exec<{ token_hash: string }>("SELECT token_hash FROM tokens").toArray();
      // Only hashes are kept.
      expect(stored.every((row) => /^[0-9a-f]{64}$/.test(row.token_hash) && row.token_hash !== fresh.token)).toBe(true);
    });
  });
});

const revokedLink = {
  result: false,
  errors: ["accesstoken has been revoked"],
  data: [],
  errorDetails: [{ code: "invalid_login_link", message: "accesstoken has been revoked" }],
};

describe("login links", () => {
  it("generates a link that validates once, answering the user with subscriptions and contacts, and the settings", async () => {
    const user = await createUser(key);
    const generated = await call("POST", "/auth/link/generate/", {
      key,
      body: { userId: user.userId, ip: "2001:db8::1" },
    });
    expectEnvelope(generated, 200);
    const { accesstoken, url, validUntil } = generated.body.data;
    expect(url).toBe(`${env.WEBSITE_URL}${accesstoken}`);
    expect(validUntil).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

    const validated = await call("POST", "/auth/link/validate/", { key, body: { userId: user.userId, accesstoken } });
    expectEnvelope(validated, 200);
    expect(validated.body.data.user).toMatchObject({
      userId: user.userId,
      subscriptions: { stock: false, shop: false },
      contacts: { numberOfContacts: 0 },
    });
    expect(validated.body.data.settings).toMatchObject({ userId: user.userId, status: "locked" });

    const second = await call("POST", "/auth/link/validate/", { key, body: { userId: user.userId, accesstoken } });
    expect(second.status).toBe(400);
    expect(second.body).toEqual(revokedLink);
  });

  it("revokes the previous link when a new one is generated", async () => {
    const user = await createUser(key);
    const first = (await call("POST", "/auth/link/generate/", { key, body: { userId: user.userId } })).body.data
      .accesstoken;
    await call("POST", "/auth/link/generate/", { key, body: { userId: user.userId } });
    const answer = await call("POST", "/auth/link/validate/", {
      key,
      body: { userId: user.userId, accesstoken: first },
    });
    expect(answer.body).toEqual(revokedLink);
  });

  it("lets exactly one of 20 parallel validations of one link succeed", async () => {
    const user = await createUser(key);
    const { accesstoken } = (await call("POST", "/auth/link/generate/", { key, body: { userId: user.userId } })).body
      .data;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("POST", "/auth/link/validate/", { key, body: { userId: user.userId, accesstoken } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const refused = answers.filter((a) => a.status === 400);
    expect(refused).toHaveLength(19);
    for (const answer of refused) expect(answer.body.errors).toEqual(["accesstoken has been revoked"]);
  });

  it("expires a link after 10 minutes (fixed clock)", async () => {
    const stub = userTokens(env.USER_TOKENS, 515151);
    const t0 = Date.now() - 3_600_000;
    const link = await stub.issue("login", LOGIN_LINK_TTL_MS, t0);
    if (!link.issued) throw new Error("not issued");
    expect(link.expiresAt - t0).toBe(10 * 60_000);
    expect(await stub.redeem("login", link.token, t0 + LOGIN_LINK_TTL_MS)).toEqual({ ok: false, reason: "expired" });
  });

  it("refuses an ip over 39 characters", async () => {
    const user = await createUser(key);
    const answer = await call("POST", "/auth/link/generate/", {
      key,
      body: { userId: user.userId, ip: "1".repeat(40) },
    });
    expectEnvelope(answer, 400);
    expect(answer.body.errors).toEqual(["ip: must be at most 39 characters"]);
  });
});
