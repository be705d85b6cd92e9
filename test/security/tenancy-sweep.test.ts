import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { authenticate } from "../../src/middleware/auth";
import { d1Bookmark } from "../../src/middleware/d1Session";
import { ipRateLimit } from "../../src/middleware/rateLimit";
import { requestContext } from "../../src/middleware/requestContext";
import { receiver } from "../fixtures/hooks";
import { call, defined, eventually, newClient } from "../harness/api";
import { activate, contactBody, createAd, createUser } from "../harness/data";
import { type DocumentOperation, securedOperations } from "../harness/document";

/**
 * Tenancy, from the OpenAPI document: every operation, called by another client with its documented
 * example aimed at the owner's resources (path ids and the ids in the body swapped for the owner's),
 * finds nothing: it answers 404 (403 where only internal clients may call), never a success and
 * never a 5xx. The owner on either shard, and the other client on the owner's shard and on the other one
 * (src/db/shards.ts). Every route without a key, called with the owner's ids, acts on nothing of theirs.
 */

/** The owner's resources, by the name of the id that points at them. */
let owned: Record<string, number>;
/** Another client's key, by where it lives: on the owner's shard or on the other one. */
let otherKeys: Record<string, string>;
/** The owner's key, and its consent to portal_a in progress (with a return URL), by its state. */
let ownerKey: string;
let consentState: string;

/** The owner's world on `shard`, and other clients on both shards. */
async function ownerOn(shard: number) {
  const other = shard === 1 ? 2 : 1;
  const owner = await newClient({ partner: true, shard });
  otherKeys = {
    "same shard": (await newClient({ partner: true, shard })).key,
    "other shard": (await newClient({ partner: true, shard: other })).key,
  };
  const key = owner.key;
  ownerKey = key;
  const user = await createUser(key);
  await activate(key, user);
  const { userId } = user;
  const { adId } = await createAd(key, userId);
  const contactId = defined(
    (await call("POST", "/contacts/", { key, body: contactBody(userId) })).body.data[0]?.contactId,
  );
  const folderId = defined(
    (await call("POST", "/folders/", { key, body: { userId, description: "Map" } })).body.data[0]?.folderId,
  );
  const taskId = defined(
    (await call("POST", "/tasks/", { key, body: { userId, portal: "portal_a", time: "09:30", enabled: true } })).body
      .data[0]?.taskId,
  );
  const manufacturerId = defined(
    (
      await call("POST", "/manufacturers/", {
        key,
        body: {
          userId,
          categoryId: 9301,
          brands: ["Leolux"],
          manufacturerTradename: "Leolux Meubelfabriek B.V.",
          manufacturerAddress: "Roermondseweg 91, 5917 AB Venlo",
          manufacturerEmail: "info@leolux.nl",
        },
      })
    ).body.data.manufacturerId,
  );
  const { webhookId } = (await call("POST", "/webhooks/", { key, body: { url: receiver("ok").url } })).body.data;
  await call("POST", `/webhooks/${webhookId}/test`, { key });
  const deliveryId = await eventually(async () => {
    const deliveries = (await call("GET", `/webhooks/${webhookId}/deliveries`, { key })).body.data;
    return deliveries[0]?.deliveryId as number | undefined;
  }, "a logged delivery");
  const published = await call("POST", "/publish/", { key, body: { userId, adId, portal: "website" } });
  const queueItemId = Number(published.headers.get("Location")?.split("/").pop());
  const { feedId } = (
    await call("POST", "/feeds/", {
      key,
      body: {
        userId,
        url: "https://erp.example.com/stock.ndjson",
        format: "ndjson",
        schedule: { every: "hourly", minute: 5 },
      },
    })
  ).body.data;
  owned = { userId, adId, contactId, folderId, taskId, manufacturerId, webhookId, deliveryId, queueItemId, feedId };
  await call("PATCH", "/client/", { key, body: { returnOrigins: ["https://erp.example.com"] } });
  const consent = await call("POST", `/oauth/${userId}/portal_a/`, {
    key,
    body: { returnUrl: "https://erp.example.com/back" },
  });
  consentState = defined(new URL(consent.body.data.redirect).searchParams.get("state"));
}

/** The example with every id the owner has swapped for the owner's (in lists too). */
function aimed(value: unknown, name = ""): unknown {
  if (Array.isArray(value)) return value.map((item) => aimed(item, name));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, aimed(inner, key)]));
  if (typeof value === "number" && owned[name] !== undefined) return owned[name];
  return value;
}

const concrete = (path: string) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "portal" ? "portal_a" : String(owned[name])));

/** The owner's ids in the query parameters the operation requires (a sync's `userId`), as a query string. */
const ownerQuery = (operation: DocumentOperation) => {
  const query = (operation.parameters ?? []).filter(
    (p) => p.in === "query" && p.required && owned[p.name] !== undefined,
  );
  return query.length ? `?${query.map((p) => `${p.name}=${owned[p.name]}`).join("&")}` : "";
};

/** Whether the request names one of the owner's resources (else it is not about them: catalogue, feeds). */
const aimsAtOwner = (path: string, body: unknown) =>
  /\{(userId|adId|contactId|folderId|taskId|manufacturerId|webhookId|deliveryId|queueItemId|feedId)\}|\?userId=/.test(
    path,
  ) ||
  /"(userId|adId|contactId|folderId|taskId|manufacturerId|webhookId|queueItemId|feedId)":/.test(
    JSON.stringify(body ?? {}),
  );

/**
 * The routes that take no key (registered before authentication), each with a probe aimed at the owner:
 * it answers without a 5xx and acts on nothing of theirs.
 */
const KEYLESS_PROBES: Record<string, () => Promise<string | undefined>> = {
  "GET /rest/v1/health": async () => {
    // It takes nothing that names a client's row, and answers nothing of one.
    const answer = await exports.default.fetch("http://api.test/rest/v1/health");
    const data = ((await answer.json()) as { data: object }).data;
    return answer.status === 200 && Object.keys(data).sort().join() === "environment,status,time"
      ? undefined
      : "health";
  },
  "GET /media/:key{images/.+}": async () => {
    const answer = await exports.default.fetch(`http://api.test/media/images/${owned.adId}/${owned.userId}.jpg`);
    return answer.status === 404 ? undefined : `media: ${answer.status}`;
  },
  "GET /oauth/callback/:portal": async () => {
    // A state that names the owner's user but is not its consent's: no redirect home, nothing finished.
    const [user] = consentState.split(".");
    const forged = `http://api.test/oauth/callback/portal_a?code=stolen&state=${user}.forged`;
    const answer = await exports.default.fetch(new Request(forged, { redirect: "manual" }));
    const still = await call("PUT", `/oauth/${owned.userId}/portal_a/`, {
      key: ownerKey,
      body: { code: "not-a-code", state: consentState },
    });
    const pending = still.body.errorDetails?.[0]?.code === "oauth_code_refused";
    return answer.status === 200 && pending
      ? undefined
      : `callback: ${answer.status}, consent ${JSON.stringify(still.body.errorDetails)}`;
  },
  "ALL /simulator/:portal/*": async () => {
    const answer = await exports.default.fetch(`http://api.test/simulator/portal_a/users/${owned.userId}`);
    return answer.status < 500 ? undefined : `simulator: ${answer.status}`;
  },
};

/** The app's routes before authentication, but its middleware. */
function keylessRoutes(): string[] {
  const authAt = app.routes.findIndex((route) => route.handler === authenticate);
  const middleware = new Set<unknown>([requestContext, ipRateLimit, d1Bookmark]);
  return [
    ...new Set(
      app.routes
        .slice(0, authAt)
        .filter((route) => !middleware.has(route.handler))
        .map((route) => `${route.method} ${route.path}`),
    ),
  ];
}

describe.each([1, 2])("tenancy of every operation, the owner on shard %i", (shard) => {
  beforeAll(() => ownerOn(shard), 120_000);

  it("finds nothing of another client's, whatever the operation", async () => {
    const leaks: string[] = [];
    let checked = 0;
    for (const [where, otherKey] of Object.entries(otherKeys))
      for (const { method, path, operation } of securedOperations) {
        const body = aimed(operation.requestBody?.content["application/json"]?.example);
        const query = ownerQuery(operation);
        if (!aimsAtOwner(`${path}${query}`, body)) continue;
        if (where === "same shard") checked += 1;
        const answer = await call(method, `http://api.test${concrete(path)}${query}`, { key: otherKey, body });
        const codes = (answer.body.errorDetails ?? []).map((d) => d.code);
        // A batch answers 200 with an outcome per ad: each must be a refusal.
        const outcomes = Array.isArray(answer.body.data) ? (answer.body.data as { result?: boolean }[]) : [];
        const perAdRefusals = outcomes.length > 0 && outcomes.every((o) => o?.result === false);
        const found = answer.status < 300 && answer.body.result !== false && !perAdRefusals;
        if (answer.status >= 500 || found || (!perAdRefusals && ![403, 404].includes(answer.status)))
          leaks.push(
            `${where}: ${method} ${path}: ${answer.status} ${codes.join(",")} ${answer.body.errors?.[0] ?? ""}`,
          );
      }
    // 96 of the 110 operations name a resource of the owner (the rest: catalogue, feeds, creating users).
    expect(checked).toBeGreaterThanOrEqual(90);
    expect(leaks).toEqual([]);
  }, 120_000);

  it("acts on nothing of the owner's from a route without a key, and every such route is probed", async () => {
    expect(keylessRoutes().sort()).toEqual(Object.keys(KEYLESS_PROBES).sort());
    const failures = [];
    for (const probe of Object.values(KEYLESS_PROBES)) failures.push(await probe());
    expect(failures.filter(Boolean)).toEqual([]);
  });
});
