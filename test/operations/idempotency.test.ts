import { createScheduledController, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import worker from "../../src/index";
import { claimKey, IDEMPOTENCY_LOCK_MS, renewKey, storeResponse } from "../../src/services/operations";
import { BASE, call, expectEnvelope, newClient, twoClients } from "../harness/api";
import { createAd, PAID_CATEGORY, userBody } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

/** A raw call, to compare answers byte for byte. */
async function send(method: string, path: string, body: unknown, headers: Record<string, string>, apiKey = key) {
  const response = await exports.default.fetch(
    new Request(`${BASE}${path}`, {
      method,
      headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    }),
  );
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const countUsers = async (externalUserId: number) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM users WHERE external_user_id = ?")
      .bind(externalUserId)
      .first<{ n: number }>()
  )?.n;

describe("Idempotency-Key", () => {
  it("replays the first answer byte for byte, with Idempotent-Replayed, and does the work once", async () => {
    const body = userBody({ externalUserId: 70_001, email: "idem@example.nl" });
    const first = await send("POST", "/users/", body, { "Idempotency-Key": "create-70001" });
    expect(first.status).toBe(200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const replay = await send("POST", "/users/", body, { "Idempotency-Key": "create-70001" });
    expect(replay.status).toBe(200);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.headers.get("Content-Type")).toBe(first.headers.get("Content-Type"));
    expect(await countUsers(70_001)).toBe(1);
    // Without a key, the same call is a new request: here refused, as externalUserId is unique per client.
    const again = await send("POST", "/users/", body, {});
    expect(again.status).toBe(409);
    expect(JSON.parse(again.text).errorDetails[0].code).toBe("external_user_id_taken");
    expect(await countUsers(70_001)).toBe(1);
  });

  it("answers 422 for the same key with another request, on another path or method too", async () => {
    const body = userBody({ externalUserId: 70_002 });
    expect((await send("POST", "/users/", body, { "Idempotency-Key": "k-70002" })).status).toBe(200);
    const other = await send("POST", "/users/", { ...body, city: "Delft" }, { "Idempotency-Key": "k-70002" });
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text)).toEqual({
      result: false,
      errors: ["Idempotency-Key: was used with a different request"],
      data: [],
      errorDetails: [
        {
          code: "idempotency_conflict",
          field: "Idempotency-Key",
          message: "Idempotency-Key: was used with a different request",
        },
      ],
    });
    expect((await send("PUT", "/users/", body, { "Idempotency-Key": "k-70002" })).status).toBe(422);
  });

  it("keys are per client: another client's identical key is its own", async () => {
    const body = userBody({ externalUserId: 70_003 });
    expect((await send("POST", "/users/", body, { "Idempotency-Key": "shared" })).status).toBe(200);
    const other = await newClient({ partner: true });
    const theirs = await send("POST", "/users/", body, { "Idempotency-Key": "shared" }, other.key);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await countUsers(70_003)).toBe(2);
  });

  it("refuses empty, blank and over-long keys with 400", async () => {
    for (const bad of ["", "   ", "x".repeat(256)]) {
      const answer = await call("POST", "/users/", {
        key,
        body: userBody({ externalUserId: 70_004 }),
        headers: { "Idempotency-Key": bad },
      });
      expectEnvelope(answer, 400);
      expect(answer.body.errors).toEqual(["Idempotency-Key: must be 1-255 characters, not only spaces"]);
    }
    expect(await countUsers(70_004)).toBe(0);
    const longest = await call("POST", "/users/", {
      key,
      body: userBody({ externalUserId: 70_004 }),
      headers: { "Idempotency-Key": "x".repeat(255) },
    });
    expectEnvelope(longest, 200);
  });

  it("20 parallel publishes with one key: one runs, the others answer 409 or the identical replay", async () => {
    const userId = await connectedSeller(key, internalKey, 100_000);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY });
    const body = { userId, adId: ad.adId, portal: "portal_a" };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => send("POST", "/publish/", body, { "Idempotency-Key": `publish-${ad.adId}` })),
    );
    const firsts = answers.filter((a) => a.status === 200 && a.headers.get("Idempotent-Replayed") === null);
    expect(firsts).toHaveLength(1);
    for (const answer of answers) {
      if (answer === firsts[0]) continue;
      if (answer.status === 409) {
        expect(JSON.parse(answer.text).errors).toEqual(["Idempotency-Key: a request with this key is still running"]);
        expect(answer.headers.get("Retry-After")).toBe("1");
      } else {
        expect(answer.status).toBe(200);
        expect(answer.headers.get("Idempotent-Replayed")).toBe("true");
        expect(answer.text).toBe(firsts[0]?.text);
        expect(answer.headers.get("Location")).toBe(firsts[0]?.headers.get("Location"));
      }
    }
    // A retry after the first answered is a replay that still names the job (the client's publish() reads it).
    const retry = await send("POST", "/publish/", body, { "Idempotency-Key": `publish-${ad.adId}` });
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.headers.get("Job-Ids")).toMatch(/^\d+$/);
    expect(retry.headers.get("Job-Ids")).toBe(firsts[0]?.headers.get("Job-Ids"));
    const charges = await env.DB.prepare("SELECT count(*) AS n FROM wallet_entries WHERE ad_id = ? AND kind = 'charge'")
      .bind(ad.adId)
      .first<{ n: number }>();
    expect(charges?.n).toBe(1);
  });

  it("keeps refusals of the request itself, frees a key whose request died, and the cron purges expired keys", async () => {
    const invalid = { userId: 99_999_999, adId: 1, portal: "nowhere" };
    const refused = await send("POST", "/publish/", invalid, { "Idempotency-Key": "refused-once" });
    expect(refused.status).toBe(400);
    const replay = await send("POST", "/publish/", invalid, { "Idempotency-Key": "refused-once" });
    expect(replay.status).toBe(400);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");

    // A request that died left its lock; once it lapses, the same request may run.
    const body = userBody({ externalUserId: 70_005 });
    const clientId = (
      await env.DB.prepare("SELECT client_id FROM idempotency_keys WHERE key = 'refused-once'").first<{
        client_id: number;
      }>()
    )?.client_id;
    const fingerprintOf = async () => {
      await send("POST", "/users/", body, { "Idempotency-Key": "died" });
      const row = await env.DB.prepare("SELECT fingerprint FROM idempotency_keys WHERE key = 'died'").first<{
        fingerprint: string;
      }>();
      return row?.fingerprint as string;
    };
    const fingerprint = await fingerprintOf();
    // The request "died" before its write: nothing of it is stored.
    await env.DB.batch([
      env.DB.prepare(
        "DELETE FROM user_settings WHERE user_id IN (SELECT id FROM users WHERE external_user_id = 70005)",
      ),
      env.DB.prepare("DELETE FROM users WHERE external_user_id = 70005"),
    ]);
    await env.DB.prepare(
      "UPDATE idempotency_keys SET status = NULL, body = NULL, locked_until = ? WHERE key = 'died' AND client_id = ?",
    )
      .bind(new Date(Date.now() + 60_000).toISOString(), clientId)
      .run();
    expect((await send("POST", "/users/", body, { "Idempotency-Key": "died" })).status).toBe(409);
    await env.DB.prepare("UPDATE idempotency_keys SET locked_until = ? WHERE key = 'died'")
      .bind(new Date(Date.now() - 1000).toISOString())
      .run();
    const rerun = await send("POST", "/users/", body, { "Idempotency-Key": "died" });
    expect(rerun.status).toBe(200);
    expect(rerun.headers.get("Idempotent-Replayed")).toBeNull();
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);

    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = ? WHERE key = 'refused-once'")
      .bind(new Date(Date.now() - 1000).toISOString())
      .run();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env);
    const left = await env.DB.prepare("SELECT key FROM idempotency_keys WHERE key IN ('refused-once', 'died')").all();
    expect(left.results).toEqual([{ key: "died" }]);
  });

  it("does not pin a key to a refusal that depended on state: insufficient means, then funded, runs anew", async () => {
    const userId = await connectedSeller(key, internalKey, 0);
    const ad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Brommer zonder tegoed" });
    const publish = () =>
      send(
        "POST",
        "/publish/",
        { userId, adId: ad.adId, portal: "portal_a" },
        { "Idempotency-Key": "broke-then-paid" },
      );
    const broke = await publish();
    expect(broke.status).toBe(409);
    expect(JSON.parse(broke.text).errorDetails[0].code).toBe("insufficient_means");
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId, amount: 100_000, description: "opwaardering" },
    });
    const paid = await publish();
    expect(paid.status).toBe(200);
    expect(paid.headers.get("Idempotent-Replayed")).toBeNull();
    const replay = await publish();
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.text).toBe(paid.text);
  });

  it("holds the lock of a slow first request for as long as it renews it", async () => {
    const db = getDb(env.DB);
    const clientId = 424_242;
    const start = new Date("2026-11-23T10:00:00Z");
    const at = (seconds: number) => new Date(start.getTime() + seconds * 1000);
    expect((await claimKey(db, env, clientId, "slow", "f", start)).kind).toBe("claimed");
    // Renewed every third of the lock while the request runs: a retry 70 s and 130 s later still waits.
    await renewKey(db, clientId, "slow", at(IDEMPOTENCY_LOCK_MS / 3000));
    await renewKey(db, clientId, "slow", at(40));
    expect((await claimKey(db, env, clientId, "slow", "f", at(70))).kind).toBe("running");
    await renewKey(db, clientId, "slow", at(80));
    expect((await claimKey(db, env, clientId, "slow", "f", at(130))).kind).toBe("running");
    // Its renewals stopped (the request died): the lock lapses a lock's length after the last one.
    expect((await claimKey(db, env, clientId, "slow", "f", at(141))).kind).toBe("claimed");
    // A key with an answer is not renewed into a lock again.
    await storeResponse(db, env, clientId, "slow", { status: 200, headers: {}, body: "{}" });
    await renewKey(db, clientId, "slow", at(150));
    expect((await claimKey(db, env, clientId, "slow", "f", at(151))).kind).toBe("replay");
  });

  it("leaves reads alone and is documented as a header of every write", async () => {
    const read = await call("GET", "/client/", { key, headers: { "Idempotency-Key": "" } });
    expectEnvelope(read, 200);
    const document = await (await exports.default.fetch(new Request(`${BASE}/openapi.json`))).json<{
      paths: Record<
        string,
        Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>
      >;
    }>();
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    const writes = operations.filter(({ method }) => method !== "get");
    const takesKey = ({ operation }: (typeof operations)[number]) =>
      operation.parameters?.some((p) => p.name === "Idempotency-Key" && p.in === "header") === true;
    expect(writes.length).toBeGreaterThan(40);
    // Every write takes a key, but the POSTs that only read: the contract's query calls with bodies, and
    // the dry runs.
    const readOnlyPosts = writes.filter((write) => !takesKey(write)).map(({ method, path }) => `${method} ${path}`);
    expect(readOnlyPosts.sort()).toEqual(
      [
        "/attributes",
        "/feeds/preview",
        "/groups",
        "/imagestatus",
        "/imagestatus/{userId}",
        "/imagestatus/{userId}/{adId}",
        "/publish/preflight",
        "/statistics",
        "/status",
        "/syncs/preview",
      ].map((path) => `post /rest/v1${path}`),
    );
    for (const write of writes.filter(takesKey)) expect(write.operation.responses).toHaveProperty("422");
  });

  it("keeps no answer for the POSTs that only read: a key sent with them is neither stored nor checked", async () => {
    const user = (await call("POST", "/users/", { key, body: userBody({ externalUserId: 70_501 }) })).body.data;
    const ad = await createAd(key, user.userId);
    // Each with two bodies: the same key with another request is what a write answers 422 to.
    const calls: [string, object, object][] = [
      ["/groups/", {}, { page: 2 }],
      ["/attributes/", { categoryId: [PAID_CATEGORY] }, { categoryId: [ad.categoryId] }],
      ["/status/", { userId: user.userId, adId: ad.adId }, { userId: user.userId, adId: [ad.adId], force: false }],
      [
        "/statistics/",
        { adId: ad.adId, dateStart: "2026-01-01", dateEnd: "2026-01-31" },
        { adId: ad.adId, dateStart: "2026-02-01", dateEnd: "2026-02-28" },
      ],
      ["/imagestatus/", { userId: user.userId }, { userId: user.userId, adId: [ad.adId] }],
      [`/imagestatus/${user.userId}/`, { userId: user.userId }, { adId: [ad.adId] }],
    ];
    for (const [path, body, otherBody] of calls) {
      const first = await send("POST", path, body, { "Idempotency-Key": "read-only-70501" });
      const other = await send("POST", path, otherBody, { "Idempotency-Key": "read-only-70501" });
      expect([first.status, other.status], path).toEqual([200, 200]);
      expect(other.headers.get("Idempotent-Replayed"), path).toBeNull();
    }
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE key = ?")
      .bind("read-only-70501")
      .first<{ n: number }>();
    expect(stored?.n).toBe(0);
  });
});

describe("answers kept for replay", () => {
  it("hold no token or secret in clear: the raw table shows none, the replay shows them as first answered", async () => {
    const first = {
      user: await send("POST", "/users/", userBody({ externalUserId: 70_901 }), { "Idempotency-Key": "secret-user" }),
      webhook: await send(
        "POST",
        "/webhooks/",
        { url: "http://hooks.test/ok/secret-at-rest" },
        {
          "Idempotency-Key": "secret-webhook",
        },
      ),
    };
    const userId = JSON.parse(first.user.text).data.userId;
    const link = await send("POST", "/auth/link/generate/", { userId }, { "Idempotency-Key": "secret-link" });
    const secrets = [
      JSON.parse(first.user.text).data.activation.activationtoken,
      JSON.parse(first.webhook.text).data.secret,
      JSON.parse(link.text).data.accesstoken,
    ] as string[];
    expect(secrets.every((secret) => typeof secret === "string" && secret.length >= 16)).toBe(true);

    const { results } = await env.DB.prepare(
      "SELECT body FROM idempotency_keys WHERE key IN ('secret-user', 'secret-webhook', 'secret-link')",
    ).all<{ body: string }>();
    expect(results).toHaveLength(3);
    for (const { body } of results) for (const secret of secrets) expect(body).not.toContain(secret);

    const replay = await send("POST", "/users/", userBody({ externalUserId: 70_901 }), {
      "Idempotency-Key": "secret-user",
    });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.text).toBe(first.user.text);
  });
});
