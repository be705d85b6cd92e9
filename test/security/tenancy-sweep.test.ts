import { beforeAll, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { receiver } from "../fixtures/hooks";
import { call, defined, eventually, newClient } from "../harness/api";
import { activate, contactBody, createAd, createUser } from "../harness/data";

/**
 * Tenancy, from the OpenAPI document: every operation, called by another client with its documented
 * example aimed at the owner's resources (path ids and the ids in the body swapped for the owner's),
 * finds nothing: it answers 404 (403 where only internal clients may call), never a success and
 * never a 5xx. Another client on the owner's shard, and one on the other shard (src/db/shards.ts).
 */

interface Operation {
  security?: unknown[];
  requestBody?: { content: Record<string, { example?: unknown }> };
}

const operations = Object.entries(committed.paths as Record<string, Record<string, Operation>>).flatMap(
  ([path, byMethod]) =>
    Object.entries(byMethod)
      .filter(([, operation]) => operation.security?.length !== 0)
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
);

/** The owner's resources, by the name of the id that points at them. */
let owned: Record<string, number>;
/** Another client's key, by where it lives: on the owner's shard (1) or on shard 2. */
let otherKeys: Record<string, string>;

beforeAll(async () => {
  const owner = await newClient({ partner: true });
  otherKeys = {
    "same shard": (await newClient({ partner: true })).key,
    "other shard": (await newClient({ partner: true, shard: 2 })).key,
  };
  const key = owner.key;
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
  owned = { userId, adId, contactId, folderId, taskId, manufacturerId, webhookId, deliveryId, queueItemId };
});

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

/** Whether the request names one of the owner's resources (else it is not about them: catalogue, feeds). */
const aimsAtOwner = (path: string, body: unknown) =>
  /\{(userId|adId|contactId|folderId|taskId|manufacturerId|webhookId|deliveryId|queueItemId)\}/.test(path) ||
  /"(userId|adId|contactId|folderId|taskId|manufacturerId|webhookId|queueItemId)":/.test(JSON.stringify(body ?? {}));

describe("tenancy of every operation", () => {
  it("finds nothing of another client's, whatever the operation", async () => {
    const leaks: string[] = [];
    let checked = 0;
    for (const [where, otherKey] of Object.entries(otherKeys))
      for (const { method, path, operation } of operations) {
        const body = aimed(operation.requestBody?.content["application/json"]?.example);
        if (!aimsAtOwner(path, body)) continue;
        if (where === "same shard") checked += 1;
        const answer = await call(method, `http://api.test${concrete(path)}`, { key: otherKey, body });
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
});
