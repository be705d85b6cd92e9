import { exports } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Ad,
  type ApiClientOptions,
  ApiError,
  createApiClient,
  createdContact,
  type ErrorDetail,
  type Event,
  jobIdsOf,
  listAll,
  pageOf,
  type paths,
  preflight,
  publish,
  retryDelayMs,
  verifyWebhook,
  waitForJob,
} from "../../client/index.ts";
import type { components } from "../../client/schema.js";
import committed from "../../openapi/openapi.json";
import { receivedBy, receiver, registerWebhook } from "../fixtures/hooks";
import { eventually, newClient, twoClients } from "../harness/api";
import { contactBody, createAd, PAID_CATEGORY, userBody } from "../harness/data";
import { connectedSeller } from "../harness/marketplace";

let key: string;

/** The client against the Worker in the pool, recording what it sends. */
function clientOf(
  apiKey: string,
  answer?: (request: Request) => Response | undefined,
  options: Pick<ApiClientOptions, "readYourWrites"> = {},
) {
  const sent: Request[] = [];
  const client = createApiClient({
    ...options,
    baseUrl: "http://api.test",
    apiKey,
    maxDelayMs: 50,
    fetch: async (request) => {
      sent.push(request.clone());
      return answer?.(request) ?? exports.default.fetch(request);
    },
  });
  return { client, sent };
}

beforeAll(async () => {
  key = (await newClient()).key;
});

describe("the typed client", () => {
  it("calls with the key and reads typed answers", async () => {
    const { client } = clientOf(key);
    const { data, response } = await client.GET("/rest/v1/client");
    expect(response.status).toBe(200);
    expect(data?.data.internal).toBe(false);
    const { error } = await client.GET("/rest/v1/users/{userId}", { params: { path: { userId: 99_999_999 } } });
    expect(error?.errorDetails[0]?.code).toBe("user_not_found");
  });

  it("sends an Idempotency-Key with every write, so a repeated write is applied once", async () => {
    const { client, sent } = clientOf(key);
    const body = userBody({ externalUserId: 81_001 });
    const created = await client.POST("/rest/v1/users", { body });
    expect(created.response.status).toBe(200);
    const idempotencyKey = sent[0]?.headers.get("Idempotency-Key");
    expect(idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const again = await client.POST("/rest/v1/users", {
      body,
      headers: { "Idempotency-Key": idempotencyKey as string },
    });
    expect(again.response.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.data?.data.userId).toBe(created.data?.data.userId);
    await client.GET("/rest/v1/client");
    expect(sent.at(-1)?.headers.get("Idempotency-Key")).toBeNull();
    // One call may leave the key out: then the same write is a new request (here refused as a duplicate).
    const unkeyed = await client.POST("/rest/v1/users", { body, headers: { "Idempotency-Key": "" } });
    expect(sent.at(-1)?.headers.has("Idempotency-Key")).toBe(false);
    expect(unkeyed.response.status).toBe(409);
    expect(unkeyed.error?.errorDetails[0]?.code).toBe("external_user_id_taken");
  });

  it("sends a key with exactly the writes whose operations take one: none with the POSTs that only read", async () => {
    const operations = Object.entries(committed.paths).flatMap(([path, methods]) =>
      Object.entries(methods as Record<string, { parameters?: { name: string }[] }>)
        .filter(([method]) => method !== "get")
        .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
    );
    const { client, sent } = clientOf(key, () => Response.json({ result: true, errors: [], data: [] }));
    const send = client as unknown as Record<string, (path: string, init: object) => Promise<unknown>>;
    for (const { method, path } of operations) {
      const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "portal" ? "portal_a" : "1"));
      await send[method]?.(filled, { body: {} });
    }
    expect(sent).toHaveLength(operations.length);
    operations.forEach(({ method, path, operation }, index) => {
      const takesKey = operation.parameters?.some((p) => p.name === "Idempotency-Key") === true;
      expect(sent[index]?.headers.has("Idempotency-Key"), `${method} ${path}`).toBe(takesKey);
    });
    expect(
      operations.filter(({ operation }) => !operation.parameters?.some((p) => p.name === "Idempotency-Key")),
    ).not.toHaveLength(0);
  });

  it("retries 429 and 503 with the same request, honouring Retry-After", async () => {
    let refusals = 2;
    const { client, sent } = clientOf(key, () => {
      if (refusals === 0) return undefined;
      refusals -= 1;
      return new Response("{}", { status: refusals === 1 ? 429 : 503, headers: { "Retry-After": "0" } });
    });
    const created = await client.POST("/rest/v1/users", { body: userBody({ externalUserId: 81_002 }) });
    expect(created.response.status).toBe(200);
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((r) => r.headers.get("Idempotency-Key"))).size).toBe(1);
    const bodies = await Promise.all(sent.map((r) => r.text()));
    expect(new Set(bodies).size).toBe(1);
    expect(JSON.parse(bodies[0] as string)).toMatchObject({ externalUserId: 81_002 });
  });

  it("gives up after its retries and answers the last refusal", async () => {
    const limited = (await newClient({ rate: 1, burst: 1 })).key;
    const { client, sent } = clientOf(limited);
    await client.GET("/rest/v1/client");
    const refused = await createApiClient({
      baseUrl: "http://api.test",
      apiKey: limited,
      retries: 1,
      maxDelayMs: 0,
      fetch: (request) => {
        sent.push(request);
        return exports.default.fetch(request);
      },
    }).GET("/rest/v1/client");
    expect(refused.response.status).toBe(429);
    expect(refused.error?.errorDetails[0]?.code).toBe("rate_limited");
    expect(sent).toHaveLength(3);
  });

  it("waits Retry-After plus a full-jitter backoff, within the limit", () => {
    const refusal = (value?: string) =>
      new Response(null, { status: 429, headers: value ? { "Retry-After": value } : {} });
    expect(retryDelayMs(refusal("2"), 0, 30_000, () => 0)).toBe(2000);
    expect(retryDelayMs(refusal("2"), 0, 30_000, () => 1)).toBe(2500);
    expect(retryDelayMs(refusal(), 0, 30_000, () => 1)).toBe(500);
    expect(retryDelayMs(refusal(), 3, 30_000, () => 0.5)).toBe(2000);
    expect(retryDelayMs(refusal("120"), 0, 30_000)).toBe(30_000);
    // Clients told the same Retry-After come back spread over the backoff, not all at once.
    const waits = Array.from({ length: 50 }, () => retryDelayMs(refusal("1"), 1, 30_000));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(1000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(2000);
    expect(new Set(waits).size).toBeGreaterThan(40);
  });

  it("keeps at most maxConcurrent requests in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const client = createApiClient({
      baseUrl: "http://api.test",
      apiKey: key,
      maxConcurrent: 2,
      fetch: async (request) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        return exports.default.fetch(request);
      },
    });
    const answers = await Promise.all(Array.from({ length: 7 }, () => client.GET("/rest/v1/client")));
    expect(answers.map((a) => a.response.status)).toEqual(Array(7).fill(200));
    expect(most).toBe(2);
  });
});

describe("the client's helpers", () => {
  it("listAll walks a list in its own paging convention: ads by cursor, events by after, users by page", async () => {
    const { client } = clientOf(key);
    const { userId } = (await client.POST("/rest/v1/users", { body: userBody() })).data?.data ?? {};
    const created: number[] = [];
    for (let i = 0; i < 5; i += 1) created.push((await createAd(key, userId as number)).adId);
    const ads: Ad[] = [];
    for await (const ad of listAll(client, "/rest/v1/ads", { query: { userId, itemsPerPage: 2, simple: true } }))
      ads.push(ad as Ad);
    expect(ads.map((ad) => ad.adId)).toEqual(created);
    // The adId filter is typed as clients of every 1.x wrote it: an id, ids, or comma-separated text.
    const [first, second] = created as [number, number];
    for (const adId of [first, [first, second], `${first},${second}`]) {
      const answer = await client.GET("/rest/v1/ads", { params: { query: { adId, simple: true } } });
      expect(
        answer.data?.data.map((ad) => ad.adId),
        JSON.stringify(adId),
      ).toEqual(typeof adId === "number" ? [first] : [first, second]);
    }
    const users: number[] = [];
    for await (const user of listAll(client, "/rest/v1/users", { query: { itemsPerPage: 1 } })) users.push(user.userId);
    expect(users).toContain(userId);
    expect(new Set(users).size).toBe(users.length);
    // pageOf keeps what dataOf leaves out: the feed's cursor, a list's paging.
    const feed = pageOf(await client.GET("/rest/v1/events", { params: { query: { after: 0, limit: 1 } } }));
    expect(feed.cursor).toBe(feed.data[0]?.eventId ?? 0);
    expect(pageOf(await client.GET("/rest/v1/users", { params: { query: { itemsPerPage: 1 } } })).totalItems).toBe(
      users.length,
    );
    // POST /contacts answers the user's whole list; createdContact gives the contact it made.
    for (const name of ["Eerste", "Tweede"]) {
      const body = contactBody(userId as number, { name }) as components["schemas"]["CreateContact"];
      const made = createdContact(await client.POST("/rest/v1/contacts", { body }));
      expect(made.name).toBe(name);
    }
    const events: Event[] = [];
    for await (const event of listAll(client, "/rest/v1/events", { query: { after: 0, limit: 1 } })) events.push(event);
    expect(events.map((e) => e.eventId)).toEqual([...events.map((e) => e.eventId)].sort((a, b) => a - b));
  });

  it("publish answers the job ids, and waitForJob waits for the job's end", async () => {
    const clients = await twoClients();
    const userId = await connectedSeller(clients.key, clients.internalKey, 100_000);
    const { adId } = await createAd(clients.key, userId);
    const { client } = clientOf(clients.key);
    const [jobId] = await publish(client, { userId, adId, portal: "portal_a" });
    const job = await waitForJob(client, jobId as number, { timeoutMs: 120_000, intervalMs: 100 });
    expect(job).toMatchObject({ queueItemId: jobId, state: "done", kind: "placement" });
    // A feature purchase names its job in Location only: jobIdsOf reads it there.
    const bought = await client.POST("/rest/v1/features", {
      body: { adId, portal: "portal_a", feature: "omhoogplaatsen" },
    });
    const [featureJob] = jobIdsOf(bought);
    expect(featureJob, JSON.stringify(bought.data ?? bought.error)).toBeGreaterThan(0);
    expect(await waitForJob(client, featureJob as number, { timeoutMs: 120_000, intervalMs: 100 })).toMatchObject({
      queueItemId: featureJob,
      kind: "feature",
    });
    const refused = await publish(client, { userId, adId: 987_654_321, portal: "portal_a" }).catch((e) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).errorDetails.map((d: ErrorDetail) => d.code)).toEqual(["ad_not_found"]);
    await expect(waitForJob(client, 987_654_321, { timeoutMs: 10 })).rejects.toBeInstanceOf(ApiError);
  });

  it("verifyWebhook checks the Standard Webhooks signature and answers the payload typed by event", () => {
    const secret = `whsec_${btoa("a secret of the endpoint, 32 bytes")}`;
    const body = JSON.stringify({
      type: "wallet.below_limit",
      timestamp: "2026-11-22 14:03:10",
      data: {
        eventId: 7,
        type: "wallet.below_limit",
        occurredAt: "2026-11-22 14:03:10",
        userId: 1,
        adId: null,
        portal: null,
        data: { balance: 800, limit: 1000 },
      },
    });
    const at = new Date();
    const headers = {
      "webhook-id": "evt_7",
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign("evt_7", at, body),
    };
    const payload = verifyWebhook(secret, new Headers(headers), body);
    // Narrowed on its type, the payload's data is that event's.
    if (payload.type !== "wallet.below_limit") throw new Error(`typed as ${payload.type}`);
    expect(payload.data.data.limit - payload.data.data.balance).toBe(200);
    // As Node's http server has them: lower-case names, a list for a repeated header, undefined for none.
    const incoming = { ...headers, "x-forwarded-for": ["10.0.0.1", "10.0.0.2"], "x-absent": undefined };
    expect(verifyWebhook(secret, incoming, body).type).toBe("wallet.below_limit");
    expect(() => verifyWebhook(`whsec_${btoa("another secret, not the endpoint")}`, headers, body)).toThrow();
    expect(() => verifyWebhook(secret, headers, body.replace("800", "900"))).toThrow();
  });

  it("verifyWebhook accepts what the API really delivers", async () => {
    const { url, name } = receiver("ok");
    const { webhookId, secret } = await registerWebhook(key, url);
    const { client } = clientOf(key);
    await client.POST("/rest/v1/webhooks/{webhookId}/test", { params: { path: { webhookId } } });
    const [delivered] = await eventually(async () => {
      const received = await receivedBy(name);
      return received.length > 0 ? received : undefined;
    }, "the test message");
    const payload = verifyWebhook(secret, delivered?.headers ?? {}, delivered?.body ?? "");
    expect(payload.type === "webhook.test" && payload.data.webhookId).toBe(webhookId);
  });
});

describe("values added within /v1", () => {
  it("reads an event of a type and an error with a code added after the client was generated", async () => {
    const later = { eventId: 1, occurredAt: "2026-11-28 12:00:00", userId: 7, adId: 12, portal: null };
    const laterEvent: Event = { ...later, type: "listing.renewed", data: { until: "2027-01-01" } };
    const laterCode: ErrorDetail["code"] = "ad_cooling_down";
    const envelope = (status: number, body: object) =>
      new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
    const { client } = clientOf(key, (request) =>
      new URL(request.url).pathname.startsWith("/rest/v1/events")
        ? envelope(200, { result: true, errors: [], data: [laterEvent], cursor: 1 })
        : envelope(409, {
            result: false,
            errors: ["adId: cooling down"],
            data: [],
            errorDetails: [{ code: laterCode, field: "adId", message: "adId: cooling down" }],
          }),
    );
    const feed = pageOf(await client.GET("/rest/v1/events", { params: { query: { after: 0 } } }));
    expect(feed.data.map((event) => event.type)).toEqual(["listing.renewed"]);
    const refused = await client.DELETE("/rest/v1/ads/{adId}", { params: { path: { adId: 12 } } });
    expect(refused.error?.errorDetails?.map((detail) => detail.code)).toEqual(["ad_cooling_down"]);
  });
});

describe("reading your own writes", () => {
  it("carries the newest x-d1-bookmark it was answered into the next request, unless told not to", async () => {
    const { client, sent } = clientOf(key);
    const created = await client.POST("/rest/v1/users", { body: userBody() });
    const bookmark = created.response.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(/^[0-9a-f]{8}-/);
    await client.GET("/rest/v1/users/{userId}", { params: { path: { userId: created.data?.data.userId ?? 0 } } });
    expect(sent[0]?.headers.get("x-d1-bookmark")).toBeNull();
    expect(sent[1]?.headers.get("x-d1-bookmark")).toBe(bookmark);

    const plain = clientOf(key, undefined, { readYourWrites: false });
    await plain.client.POST("/rest/v1/users", { body: userBody() });
    await plain.client.GET("/rest/v1/client");
    expect(plain.sent.map((r) => r.headers.get("x-d1-bookmark"))).toEqual([null, null]);
  });
});

describe("the client's request types", () => {
  // Checked by the typecheck of npm test: a field with a default may be left out of a request; a
  // required one may not. (The calls are typed, never sent.)
  it("accept calls that leave out fields with defaults, and refuse a call missing a required field", () => {
    type Body<Path extends keyof paths, Method extends "post" | "put"> = paths[Path][Method] extends {
      requestBody?: { content: { "application/json": infer B } };
    }
      ? B
      : never;
    const publish: Body<"/rest/v1/publish", "post"> = { userId: 1, adId: 2, portal: "portal_a" };
    const images: Body<"/rest/v1/images/{adId}", "put"> = {
      images: [{ image: { url: "https://example.com/a.png" } }],
    };
    // An attribute set of an ad, as POST and PUT /ads/ take them.
    const attributes: components["schemas"]["AdAttributesInput"] = {
      portal: "portal_a",
      values: [{ key: "condition", value: "gebruikt" }],
    };
    // @ts-expect-error portal is required
    const missing: Body<"/rest/v1/publish", "post"> = { userId: 1, adId: 2 };
    expect([publish, images, attributes, missing]).toHaveLength(4);
  });

  it("runs a dry run of publishing with preflight(), and throws the API's error with its codes", async () => {
    const { client, sent } = clientOf(key);
    const { userId } = (await client.POST("/rest/v1/users", { body: userBody() })).data?.data ?? {};
    const ad = await client.POST("/rest/v1/ads", {
      body: {
        userId: userId as number,
        categoryId: PAID_CATEGORY,
        title: "Brommer voor de proef",
        description: "Een nette brommer",
        price: { model: "fixed", price: 50_000 },
      },
    });
    const adId = ad.data?.data.adId as number;
    const dry = await preflight(client, { userId: userId as number, adId, portal: "website" });
    expect(dry.verdicts).toEqual([expect.objectContaining({ adId, portal: "website", outcome: "refused" })]);
    expect(dry.verdicts[0]?.errorDetails).toEqual([expect.objectContaining({ code: "user_locked" })]);
    expect(sent.at(-1)?.headers.has("Idempotency-Key")).toBe(false);
    const refused = await preflight(client, { userId: 987_654, adId, portal: "website" }).catch((error) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 404, errorDetails: [expect.objectContaining({ code: "user_not_found" })] });
  });
});
