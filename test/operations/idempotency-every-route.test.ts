import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { keepsResponse } from "../../src/services/operations";
import { newClient } from "../harness/api";
import { createAd, createUser } from "../harness/data";

/**
 * The typed client sends an `Idempotency-Key` with every write, so every write route must take one with
 * each body a client can send: none, an empty body declared as JSON, and the document's own example.
 * Each answer is below 500, and a kept answer comes back byte for byte on the same key.
 */

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { example?: unknown }> };
}

const writes = Object.entries(committed.paths as Record<string, Record<string, Operation>>).flatMap(
  ([path, byMethod]) =>
    Object.entries(byMethod)
      .filter(([, operation]) => operation.parameters?.some((p) => p.in === "header" && p.name === "Idempotency-Key"))
      .map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
);

const BODY_SHAPES = ["none", "empty", "example"] as const;
type BodyShape = (typeof BODY_SHAPES)[number];

interface Fixture {
  userId: number;
  adId: number;
}

/** The document's example with the ids a fresh fixture gives (a user and an ad of this client). */
function withFixtureIds(value: unknown, fixture: Fixture): unknown {
  if (Array.isArray(value)) return value.map((item) => withFixtureIds(item, fixture));
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, item]) => {
      if (name === "userId" && typeof item === "number") return [name, fixture.userId];
      if (name === "adId" && typeof item === "number") return [name, fixture.adId];
      if (name === "externalUserId" && typeof item === "number") return [name, fixture.userId + 9_000_000];
      return [name, withFixtureIds(item, fixture)];
    }),
  );
}

function requestInit(operation: Operation, shape: BodyShape, fixture: Fixture): { body?: string; type?: string } {
  if (shape === "none") return {};
  if (shape === "empty") return { body: "", type: "application/json" };
  const example = operation.requestBody?.content["application/json"]?.example;
  return { body: JSON.stringify(withFixtureIds(example ?? {}, fixture)), type: "application/json" };
}

let key: string;

beforeAll(async () => {
  key = (await newClient({ internal: true })).key;
});

async function send(method: string, url: string, idempotencyKey: string, init: { body?: string; type?: string }) {
  const headers: Record<string, string> = { Authorization: `Bearer ${key}`, "Idempotency-Key": idempotencyKey };
  if (init.type) headers["Content-Type"] = init.type;
  const response = await exports.default.fetch(new Request(url, { method, headers, body: init.body }));
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe("Idempotency-Key on every write route", () => {
  it.each(
    writes.flatMap((write) =>
      BODY_SHAPES.map((shape) => [`${write.method} ${write.path} (${shape} body)`, write, shape] as const),
    ),
  )("%s: below 500, and a kept answer replays exactly", async (_, write, shape) => {
    const user = await createUser(key);
    const ad = await createAd(key, user.userId);
    const fixture = { userId: user.userId, adId: ad.adId };
    const path = write.path.replace(/\{(\w+)\}/g, (_match, name: string) =>
      name === "portal"
        ? "portal_a"
        : name === "userId"
          ? String(user.userId)
          : name === "adId"
            ? String(ad.adId)
            : "1",
    );
    const url = `http://api.test${path}/`;
    const init = requestInit(write.operation, shape, fixture);
    const idempotencyKey = `every-route-${crypto.randomUUID()}`;

    const first = await send(write.method, url, idempotencyKey, init);
    expect(first.status, first.text).toBeLessThan(500);
    expect(JSON.parse(first.text)).toHaveProperty("result");

    const again = await send(write.method, url, idempotencyKey, init);
    expect(again.status, again.text).toBeLessThan(500);
    if (keepsResponse(first.status) && again.headers.get("Idempotent-Replayed") !== "true") {
      // Only a publish whose refusal depends on state frees its key: then it is answered afresh. A sync
      // keeps its key with the sync it starts (its stock is streamed, never held to fingerprint): a call
      // refused before it started one is answered afresh, the same (test/syncs/sync.test.ts replays one).
      expect(write.path, `${first.status} ${first.text}`).toMatch(/\/publish|\/syncs$/);
      expect(again.text).toBe(first.text);
      return;
    }
    if (!keepsResponse(first.status)) {
      expect(again.headers.get("Idempotent-Replayed")).toBeNull();
      return;
    }
    expect(again.status).toBe(first.status);
    expect(again.text).toBe(first.text);
    for (const header of ["content-type", "location", "job-ids"])
      expect(again.headers.get(header), header).toBe(first.headers.get(header));
  });
});
