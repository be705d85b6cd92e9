import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type Answer, call, newClient } from "../harness/api";
import { interceptD1 } from "../harness/d1";
import { createAd, createUser } from "../harness/data";
import { securedOperations } from "../harness/document";

/**
 * A dependency that does not answer, as Cloudflare's bindings say so (D1's "Network connection lost", a
 * Durable Object's or a bucket's retryable errors): the clients it serves get 503 with Retry-After, never a
 * 500, on every route, and the others are served on. Each dependency fails in turn; every operation of the
 * document is sent as its own example, with the caller's ids.
 */

const D1_NOT_ANSWERING = "D1_ERROR: Network connection lost.";
const failingD1 = (database: D1Database, message = D1_NOT_ANSWERING) =>
  interceptD1(database, () => {
    throw new Error(message);
  });

let shard2: { key: string; ids: Record<string, unknown> };
let shard1Key: string;

beforeAll(async () => {
  const { key } = await newClient({ partner: true, shard: 2 });
  const { userId } = await createUser(key);
  const { adId } = await createAd(key, userId);
  shard2 = { key, ids: { userId, adId, portal: "portal_a", month: "2026-11" } };
  shard1Key = (await newClient({ partner: true })).key;
  await createUser(shard1Key);
});

/** Each operation as its document's example, with the caller's own user and ad. */
async function sendEvery(key: string, bindings: object): Promise<(Answer & { operation: string })[]> {
  const own = (name: string, fallback: unknown) => shard2.ids[name] ?? fallback;
  const answers = [];
  for (const { method, path, operation } of securedOperations) {
    const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => String(own(name, 1)));
    const query = new URLSearchParams();
    for (const p of operation.parameters ?? [])
      if (p.in === "query" && p.required) query.set(p.name, String(own(p.name, p.schema?.example ?? 1)));
    const example = operation.requestBody?.content["application/json"]?.example as Record<string, unknown> | undefined;
    const body = example && {
      ...example,
      ...Object.fromEntries(
        ["userId", "adId"]
          .filter((name) => name in example)
          .map((name) => [name, Array.isArray(example[name]) ? [own(name, 1)] : own(name, 1)]),
      ),
    };
    const answer = await call(method, `http://api.test${concrete}${query.size ? `?${query}` : ""}`, {
      key,
      body,
      env: bindings as never,
    });
    answers.push({ ...answer, operation: `${method} ${path}` });
  }
  return answers;
}

/** No answer is a 500; each 503 names `code` and carries Retry-After. */
function expectRetryable(answers: (Answer & { operation: string })[], code: string) {
  for (const answer of answers) {
    expect(answer.status, `${answer.operation}: ${JSON.stringify(answer.body)}`).not.toBe(500);
    if (answer.status !== 503) continue;
    expect(
      answer.body.errorDetails?.map((d) => d.code),
      answer.operation,
    ).toEqual([code]);
    expect(answer.headers.get("Retry-After"), answer.operation).toBe("5");
  }
  return answers.filter((answer) => answer.status === 503).map((answer) => answer.operation);
}

describe("a dependency that does not answer", () => {
  it("a shard: its clients get 503 shard_unavailable on every route that reads their data; the other shard's are served", async () => {
    const down = { ...env, DB_2: failingD1(env.DB_2) };
    const answers = await sendEvery(shard2.key, down);
    const refused = expectRetryable(answers, "shard_unavailable");
    // Every other answer is what the call gets anyway, before its data is read: a partner's refusal (403),
    // an example naming another id than its path (400 `not_updatable`), the bundled category tree.
    const before = answers.filter(
      (a) =>
        a.status === 403 ||
        a.body.errorDetails?.every((d) => d.code === "not_updatable") ||
        a.operation.includes("/categories"),
    );
    expect(refused.length + before.length).toBe(securedOperations.length);
    expect(refused.length).toBeGreaterThan(100);
    expect((await call("GET", "/users/", { key: shard1Key, env: down as never })).status).toBe(200);
    // Once it answers again, so does the API.
    expect((await call("GET", "/users/", { key: shard2.key })).status).toBe(200);
  }, 120_000);

  it("the client directory: a new key is read from the shards' copies; with its shard down too, 503", async () => {
    const { key } = await newClient({ partner: true, shard: 2 });
    const noDirectory = { ...env, DIRECTORY: failingD1(env.DIRECTORY) };
    expect((await call("GET", "/users/", { key, env: noDirectory as never })).status).toBe(200);
    const { key: another } = await newClient({ partner: true, shard: 2 });
    const nothing = { ...noDirectory, DB: failingD1(env.DB), DB_2: failingD1(env.DB_2) };
    const answer = await call("GET", "/users/", { key: another, env: nothing as never });
    expect(answer.status, JSON.stringify(answer.body)).toBe(503);
    expect(answer.body.errorDetails?.map((d) => d.code)).toEqual(["service_unavailable"]);
    expect(answer.headers.get("Retry-After")).toBe("5");
  });

  it("the rate limiter's Durable Object: 503 service_unavailable on every route", async () => {
    const overloaded = {
      idFromName: (name: string) => env.RATE_LIMITER.idFromName(name),
      get: () => ({
        take: async () => {
          throw new Error("Durable Object is overloaded. Requests queued for too long.");
        },
      }),
    };
    const answers = await sendEvery(shard2.key, { ...env, RATE_LIMITER: overloaded });
    expect(expectRetryable(answers, "service_unavailable")).toHaveLength(securedOperations.length);
  }, 120_000);

  it("the archive's bucket: a page of history is 503 service_unavailable", async () => {
    const notAnswering = (operation: string) => async () => {
      throw new Error(`${operation}: We encountered an internal error. Please try again. (10001)`);
    };
    const archive = { list: notAnswering("list"), get: notAnswering("get") };
    const answer = await call("GET", "/archive/jobs?month=2026-11", {
      key: shard2.key,
      env: { ...env, ARCHIVE: archive } as never,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(503);
    expect(answer.body.errorDetails?.map((d) => d.code)).toEqual(["service_unavailable"]);
    expect(answer.headers.get("Retry-After")).toBe("5");
  });

  it("a bug stays a 500: an error that is no dependency's outage is not disguised as one", async () => {
    const broken = { ...env, DB_2: failingD1(env.DB_2, "D1_ERROR: no such column: nonsense") };
    const answer = await call("GET", "/users/", { key: shard2.key, env: broken as never });
    expect(answer.status).toBe(500);
    expect(answer.headers.get("Retry-After")).toBeNull();
  });
});
