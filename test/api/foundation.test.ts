import { env } from "cloudflare:test";
import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { getDb } from "../../src/db/client";
import { apiClients } from "../../src/db/schema";
import { ok } from "../../src/lib/envelope";
import { text } from "../../src/lib/fields";
import { apiRoute, envelope, jsonBody } from "../../src/routes/openapi";
import { BASE, call, executionContext, expectEnvelope, newClient } from "../harness/api";

const RATE_LIMITED = {
  result: false,
  errors: ["rate limit exceeded"],
  data: [],
  errorDetails: [{ code: "rate_limited", message: "rate limit exceeded" }],
};

describe("envelope and status codes", () => {
  it("answers the health route without a key", async () => {
    const answer = await call("GET", "/health");
    expectEnvelope(answer, 200);
    expect(answer.body.data.status).toBe("ok");
    expect(answer.headers.get("X-Request-Id")).toBeTruthy();
  });

  it("echoes a client's request id", async () => {
    const answer = await call("GET", "/health", { headers: { "X-Request-Id": "abc-123" } });
    expect(answer.headers.get("X-Request-Id")).toBe("abc-123");
  });

  it("returns the calling client, with or without a trailing slash", async () => {
    const { key, client } = await newClient({ internal: true, rate: 5, burst: 20 });
    for (const path of ["/client/", "/client"]) {
      const answer = await call("GET", path, { key });
      expectEnvelope(answer, 200);
      expect(answer.body.data).toEqual({
        clientId: client.id,
        name: client.name,
        internal: true,
        partner: false,
        rate: 5,
        burst: 20,
        returnOrigins: [],
      });
    }
  });

  it("falls back to the default rate limit for a client without an override", async () => {
    const { key } = await newClient({ rate: null, burst: null });
    const answer = await call("GET", "/client/", { key });
    expect(answer.body.data).toMatchObject({ rate: 3, burst: 10 });
  });

  it("answers 401 without a key, with an unknown key and with a revoked key", async () => {
    expectEnvelope(await call("GET", "/client/"), 401);
    expect((await call("GET", "/client/", { headers: { Authorization: "Basic abc" } })).status).toBe(401);
    expectEnvelope(await call("GET", "/client/", { key: "no-such-key" }), 401);

    const { key, client } = await newClient();
    // A client is revoked in the directory, which authentication reads.
    await getDb(env.DIRECTORY).update(apiClients).set({ revoked: true }).where(eq(apiClients.id, client.id));
    const revoked = await call("GET", "/client/", { key });
    expectEnvelope(revoked, 401);
    expect(revoked.body.errors).toEqual(["invalid API key"]);
  });

  it("answers 405 with Allow for a known path and another method", async () => {
    const { key } = await newClient();
    for (const [method, path, allow] of [
      ["GET", "/publish/", "POST, PUT, DELETE"],
      ["PATCH", "/jobs/12/", "GET"],
      ["DELETE", "/status/totals/3", "GET"],
    ] as const) {
      const answer = await call(method, path, { key });
      expectEnvelope(answer, 405);
      expect(answer.headers.get("Allow"), path).toBe(allow);
      expect(answer.body.errors[0]).toMatch(/^method not allowed: /);
    }
  });

  it("challenges a 401 with WWW-Authenticate", async () => {
    const missing = await call("GET", "/client/");
    expect(missing.headers.get("WWW-Authenticate")).toBe('Bearer realm="classified-ads-api"');
    const bad = await call("GET", "/client/", { key: "not-a-key" });
    expect(bad.headers.get("WWW-Authenticate")).toBe('Bearer realm="classified-ads-api", error="invalid_token"');
  });

  it("answers 404 for an unknown route", async () => {
    const { key } = await newClient();
    const answer = await call("GET", "/no-such-thing/", { key });
    expectEnvelope(answer, 404);
    expect(answer.body.errors[0]).toContain("route not found");
  });

  it("answers 400 for malformed JSON, a bad field, a wrong content type, and 413 for a body over 1 MiB", async () => {
    const app = createApp();
    const Echo = z.object({ title: text(5, 60), count: z.number().int().optional() });
    app.openapi(
      apiRoute({
        method: "post",
        path: "/rest/v1/echo",
        tags: ["Test"],
        summary: "echo",
        request: { body: jsonBody(Echo) },
        response: envelope(Echo),
      }),
      (c) => c.json(ok(c.req.valid("json")), 200),
    );
    const { key } = await newClient();
    const send = async (body: BodyInit, contentType = "application/json") => {
      const response = await app.fetch(
        new Request(`${BASE}/echo/`, {
          method: "POST",
          body,
          headers: { Authorization: `Bearer ${key}`, "Content-Type": contentType },
        }),
        env,
        executionContext(),
      );
      return {
        status: response.status,
        body: (await response.json()) as { result: boolean; errors: string[]; data: unknown },
      };
    };

    expect(await send(JSON.stringify({ title: "A fine title" }))).toEqual({
      status: 200,
      body: { result: true, errors: [], data: { title: "A fine title" } },
    });
    expect(await send("{not json")).toEqual({
      status: 400,
      body: {
        result: false,
        errors: ["body: malformed JSON"],
        data: [],
        errorDetails: [{ code: "malformed_body", field: "body", message: "body: malformed JSON" }],
      },
    });
    expect(await send(JSON.stringify({ title: "abc", count: "x" }))).toEqual({
      status: 400,
      body: {
        result: false,
        errors: ["title: must be 5-60 characters", "count: must be a number"],
        data: [],
        errorDetails: [
          { code: "validation_failed", field: "title", message: "title: must be 5-60 characters" },
          { code: "validation_failed", field: "count", message: "count: must be a number" },
        ],
      },
    });
    expect(await send(JSON.stringify({}))).toMatchObject({ status: 400, body: { errors: ["title: is required"] } });
    expect(await send("title=abc", "application/x-www-form-urlencoded")).toMatchObject({
      status: 415,
      body: {
        result: false,
        errors: ["body: Content-Type must be application/json"],
        errorDetails: [{ code: "unsupported_media_type" }],
      },
    });
    expect(await send(`{"title":"${"x".repeat(1024 * 1024)}"}`)).toEqual({
      status: 413,
      body: {
        result: false,
        errors: ["body: must not exceed 1 MiB"],
        data: [],
        errorDetails: [{ code: "body_too_large", field: "body", message: "body: must not exceed 1 MiB" }],
      },
    });
  });

  it("answers 500 with `internal error` and no stack for an unexpected exception", async () => {
    const app = createApp();
    app.get("/rest/v1/explode", () => {
      throw new Error("secret detail at line 42");
    });
    const { key } = await newClient();
    const response = await app.fetch(
      new Request(`${BASE}/explode`, { headers: { Authorization: `Bearer ${key}` } }),
      env,
      executionContext(),
    );
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      result: false,
      errors: ["internal error"],
      data: [],
      errorDetails: [{ code: "internal_error", message: "internal error" }],
    });
    expect(text).not.toContain("secret detail");
  });
});

describe("rate limiting", () => {
  it("lets exactly the burst through 30 concurrent requests, then refills at the rate", async () => {
    const { key } = await newClient({ rate: null, burst: null });
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, () => call("GET", "/client/", { key })));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    // The burst (10), plus what the bucket refilled (3 a second) while a busy machine spread the calls.
    expect(ok.length).toBeGreaterThanOrEqual(10);
    expect(ok.length).toBeLessThanOrEqual(10 + Math.floor(((Date.now() - started) / 1000) * 3));
    expect(limited).toHaveLength(30 - ok.length);
    for (const answer of limited) {
      expect(answer.body).toEqual(RATE_LIMITED);
      expect(Number(answer.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    }
    for (const answer of answers) {
      expect(answer.headers.get("RateLimit-Policy")).toBe('"default";q=10;w=4');
      expect(answer.headers.get("RateLimit")).toMatch(/^"default";r=\d+;t=\d+$/);
    }

    await new Promise((resolve) => setTimeout(resolve, 1050));
    const again = await Promise.all(Array.from({ length: 3 }, () => call("GET", "/client/", { key })));
    expect(again.map((a) => a.status)).toEqual([200, 200, 200]);
  });

  it("never shares a bucket between two clients", async () => {
    const first = await newClient({ rate: 1, burst: 2 });
    const second = await newClient({ rate: 1, burst: 2 });
    // Three at once against a burst of 2 (1 a second more for each second the calls took).
    const admitted = async (key: string) => {
      const started = Date.now();
      const answers = await Promise.all([1, 2, 3].map(() => call("GET", "/client/", { key })));
      const refilled = Math.floor((Date.now() - started) / 1000);
      return { ok: answers.filter((a) => a.status === 200).length, most: Math.min(3, 2 + refilled) };
    };
    for (const client of [first, second]) {
      const { ok, most } = await admitted(client.key);
      expect(ok).toBeGreaterThanOrEqual(2);
      expect(ok).toBeLessThanOrEqual(most);
    }
  });

  it("does not rate limit the health route", async () => {
    const answers = await Promise.all(Array.from({ length: 15 }, () => call("GET", "/health")));
    expect(answers.every((a) => a.status === 200)).toBe(true);
  });
});
