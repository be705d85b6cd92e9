import { beforeAll, describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import { call, expectError, newClient } from "../harness/api";
import { createUser } from "../harness/data";
import { type DocumentOperation, securedOperations } from "../harness/document";

/**
 * Strict input, from the OpenAPI document: every operation that takes a JSON body or a query refuses a
 * field it does not name with 400 `unknown_field`, the field named, instead of dropping it.
 */

interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  readOnly?: boolean;
  properties?: Record<string, JsonSchema>;
}

let internalKey: string;

beforeAll(async () => {
  internalKey = (await newClient({ internal: true })).key;
});

/** A path with every parameter filled with an id that exists nowhere (a required query parameter too: a sync's `userId`). */
const concrete = (path: string, operation?: DocumentOperation) => {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "portal" ? "portal_a" : "1"));
  const required = (operation?.parameters ?? []).filter((p) => p.in === "query" && p.required);
  return required.length ? `${filled}?${required.map((p) => `${p.name}=1`).join("&")}` : filled;
};

describe("strict input", () => {
  const withBody = securedOperations.filter((o) => o.operation.requestBody?.content["application/json"]);
  const withQuery = securedOperations.filter((o) => o.operation.parameters?.some((p) => p.in === "query"));

  it.each(withBody.map((o) => [`${o.method} ${o.path}`, o] as const))(
    "%s refuses an unknown body field",
    async (_, { method, path, operation }) => {
      const answer = await call(method, `http://api.test${concrete(path, operation)}`, {
        key: internalKey,
        body: { zzUnknownField: 1 },
      });
      expect(answer.status).toBe(400);
      // (The PATCH operations say which fields they do change instead.)
      expect(answer.body.errorDetails).toContainEqual({
        code: "unknown_field",
        field: "zzUnknownField",
        message: expect.stringMatching(/^zzUnknownField: (unknown field|cannot be patched; )/),
      });
    },
  );

  it.each(withQuery.map((o) => [`${o.method} ${o.path}`, o] as const))(
    "%s refuses an unknown query parameter",
    async (_, { method, path }) => {
      const answer = await call(method, `http://api.test${concrete(path)}?zzUnknownParameter=1`, {
        key: internalKey,
      });
      expect(answer.status).toBe(400);
      expect(answer.body.errorDetails).toContainEqual({
        code: "unknown_field",
        field: "zzUnknownParameter",
        message: "zzUnknownParameter: unknown field",
      });
    },
  );

  it("answers a body field of the wrong type with one message, that its type is wrong, for every field of every body", async () => {
    // (`POST /attributes/` with `locale` as a string answered a second, untrue message too: "must be at
    // most 2 characters", the array's maximum checked against the string.)
    const schemas = (committed.components as { schemas: Record<string, JsonSchema> }).schemas;
    const resolved = (schema: JsonSchema | undefined): JsonSchema | undefined =>
      schema?.$ref ? resolved(schemas[schema.$ref.replace("#/components/schemas/", "")]) : schema;
    /** A value of another type than the field's one type (none for a field of several). */
    const wrongFor = (schema: JsonSchema): unknown => {
      const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== "null") : [schema.type];
      if (schema.readOnly || type.length !== 1) return undefined;
      return { array: "text", object: 7, string: 12_345, integer: "text", number: "text", boolean: "text" }[
        String(type[0])
      ];
    };
    const untrue: string[] = [];
    let checked = 0;
    for (const { method, path, operation } of withBody) {
      const body = resolved(
        (operation.requestBody?.content["application/json"] as { schema?: JsonSchema } | undefined)?.schema,
      );
      for (const [field, schema] of Object.entries(body?.properties ?? {})) {
        const wrong = wrongFor(resolved(schema) ?? {});
        if (wrong === undefined) continue;
        const answer = await call(method, `http://api.test${concrete(path, operation)}`, {
          key: internalKey,
          body: { [field]: wrong },
        });
        const about = (answer.body.errorDetails ?? []).filter((d) => d.field === field);
        checked += 1;
        // A type's name, or the values an enumeration takes: one true message.
        if (
          answer.status !== 400 ||
          about.length !== 1 ||
          !/^\S+: must be (an? |one of: )/.test(about[0]?.message ?? "")
        )
          untrue.push(
            `${method} ${path} ${field}=${JSON.stringify(wrong)}: ${JSON.stringify(about.map((d) => d.message))}`,
          );
      }
    }
    expect(checked).toBeGreaterThan(200);
    expect(untrue).toEqual([]);
  }, 120_000);

  it("refuses __proto__ and constructor as query names, at the top and nested, as unknown fields", async () => {
    for (const query of ["__proto__[x]=1", "__proto__=1", "constructor[prototype][x]=1", "order[__proto__][x]=1"]) {
      const answer = await call("GET", `/jobs/?${query}`, { key: internalKey });
      expect(answer.status, query).toBe(400);
      expect(answer.body.errorDetails?.[0]?.code, query).toMatch(/^(unknown_field|validation_failed)$/);
      expect(({} as Record<string, unknown>).x, "no prototype was touched").toBeUndefined();
    }
    const jobs = await call("GET", "/jobs/?__proto__[x]=1", { key: internalKey });
    expect(jobs.body.errorDetails).toEqual([
      { code: "unknown_field", field: "__proto__", message: "__proto__: unknown field" },
    ]);
  });

  it("names a misspelt field of POST /ads/ and of GET /jobs/, and accepts the fields the spec lists", async () => {
    const { key } = await newClient({ partner: true });
    const unknown = (answer: { body: { errorDetails?: { code: string; message: string }[] } }) =>
      answer.body.errorDetails?.filter((d) => d.code === "unknown_field").map((d) => d.message);
    const misspelt = await call("POST", "/ads/", { key, body: { titel: "Fiets", prijs: 100 } });
    expect(misspelt.status).toBe(400);
    expect(unknown(misspelt)).toEqual(["titel: unknown field", "prijs: unknown field"]);
    const jobs = await call("GET", "/jobs/?userid=1&stat=error", { key });
    expectError(jobs, "unknown_field");
    expect(jobs.body.errors).toEqual(["userid: unknown field", "stat: unknown field"]);
    // The fields the spec lists are taken as before.
    const user = await createUser(key);
    expect(
      (await call("GET", `/jobs/?userId=${user.userId}&state=error&kind=placement&page=1&itemsPerPage=10`, { key }))
        .status,
    ).toBe(200);
    expect(
      (await call("GET", `/ads/?userId=${user.userId}&status=active&page=1&itemsPerPage=25`, { key })).status,
    ).toBe(200);
  });
});
