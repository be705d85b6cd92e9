import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newClient } from "../harness/api";
import { securedOperations } from "../harness/document";

/**
 * Every operation of the OpenAPI document, as an anonymous caller and as a careless one: without a key
 * it answers 401 with the envelope; with random bodies and query values it never answers a 5xx.
 */

const concrete = (path: string, id: string | number = 1) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "portal" ? "portal_a" : String(id)));

let key: string;

beforeAll(async () => {
  key = (await newClient({ internal: true })).key;
});

describe("every operation", () => {
  it.each(securedOperations.map((o) => [`${o.method} ${o.path}`, o] as const))(
    "%s answers 401 without a key",
    async (_, o) => {
      const answer = await call(o.method, `http://api.test${concrete(o.path)}`, {
        body: o.operation.requestBody ? {} : undefined,
      });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ result: false, errorDetails: [{ code: "missing_api_key" }] });
    },
  );

  it("never answers a 5xx to random bodies, path ids and query values, on any operation", async () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    const id = fc.oneof(fc.integer({ min: -5, max: 2 ** 53 }), fc.constantFrom("0", "x", "-1", "1e3", "%00"));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...securedOperations), id, json, fc.string(), async (o, pathId, body, query) => {
        const queryName = o.operation.parameters?.find((p) => p.in === "query")?.name ?? "q";
        const url = `http://api.test${concrete(o.path, encodeURIComponent(String(pathId)))}?${queryName}=${encodeURIComponent(query)}`;
        const answer = await call(o.method, url, { key, body: o.operation.requestBody ? body : undefined });
        expect(answer.status, `${o.method} ${url} ${JSON.stringify(body)}`).toBeLessThan(500);
      }),
      { numRuns: 300 },
    );
  }, 120_000);
});
