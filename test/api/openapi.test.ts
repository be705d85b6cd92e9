import { describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import packageJson from "../../package.json";
import docsInit from "../../public/docs/init.js?raw";
import docsPage from "../../public/docs.html?raw";
import { app } from "../../src/app";
import { onlyReads } from "../../src/lib/calls";
import { ERROR_CODES } from "../../src/lib/errors";
import { call, newClient } from "../harness/api";

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  responses: Record<string, { headers?: Record<string, unknown> } | undefined>;
}

/** Every route the app serves, as `METHOD /path/{param}`, from Hono's own route table. */
function servedRoutes(): string[] {
  const routes = app.routes
    .filter((r) => r.method !== "ALL" && r.path.startsWith("/rest/v1/") && !r.path.endsWith("/openapi.json"))
    .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
  return [...new Set(routes)].sort();
}

describe("OpenAPI document", () => {
  it("has an example on every JSON request body and response", () => {
    type Media = { content?: Record<string, { example?: unknown }> };
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(committed.paths as Record<string, Record<string, unknown>>)) {
      for (const [method, operation] of Object.entries(
        operations as Record<string, { requestBody?: Media; responses: Record<string, Media> }>,
      )) {
        const bodies = [["request", operation.requestBody], ...Object.entries(operation.responses)] as [
          string,
          Media | undefined,
        ][];
        for (const [what, media] of bodies) {
          const json = media?.content?.["application/json"];
          if (json && json.example === undefined) missing.push(`${method} ${path} ${what}`);
          // A success example reads as a success.
          const example = json?.example as { result?: unknown; errors?: unknown } | undefined;
          if (what.startsWith("2") && example && "result" in example)
            expect(example, `${method} ${path} ${what}`).toMatchObject({ result: true, errors: [] });
        }
      }
    }
    expect(missing).toEqual([]);
    // Realistic values, never a placeholder.
    expect(JSON.stringify(committed)).not.toMatch(/"textx*"/);
    // The examples follow the schemas (Redocly's no-invalid-media-type-examples in npm run lint:openapi).
    const createUser = (committed.paths as Record<string, { post?: { responses: Record<string, Media> } }>)[
      "/rest/v1/users"
    ];
    expect(createUser?.post?.responses["404"]?.content?.["application/json"]?.example).toMatchObject({
      result: false,
      errorDetails: [{ code: "user_not_found" }],
    });
  });

  it("is OpenAPI 3.1 with the bearer scheme and lists exactly the routes the app serves", async () => {
    const answer = await call("GET", "/openapi.json");
    expect(answer.status).toBe(200);
    const doc = answer.body as unknown as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });

    const documented = Object.entries(doc.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(servedRoutes());
    for (const operations of Object.values(doc.paths)) {
      for (const operation of Object.values(operations)) expect(operation.responses).toHaveProperty("200");
    }
  });

  it("names every operation with a unique operationId and documents its headers", async () => {
    const doc = (await call("GET", "/openapi.json")).body as unknown as {
      paths: Record<string, Record<string, Operation>>;
      tags: { name: string; description: string }[];
      info: { license?: { name: string } };
    };
    const operations = Object.entries(doc.paths).flatMap(([path, byMethod]) =>
      Object.entries(byMethod).map(([method, operation]) => ({ at: `${method} ${path}`, ...operation })),
    );
    const ids = operations.map((o) => o.operationId);
    expect(ids.filter((id) => !id)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining(["ads.get", "publish.create", "publish.batch.delete", "users.byUserId.get"]),
    );
    for (const operation of operations) {
      const ok = operation.responses["200"];
      expect(Object.keys(ok?.headers ?? {}), operation.at).toContain("X-Request-Id");
      if (operation.security?.length) expect(Object.keys(ok?.headers ?? {}), operation.at).toContain("RateLimit");
      if (operation.responses["429"])
        expect(Object.keys(operation.responses["429"].headers ?? {}), operation.at).toContain("Retry-After");
    }
    const used = new Set(operations.flatMap((o) => o.tags ?? []));
    expect(doc.tags.map((t) => t.name).sort()).toEqual([...used].sort());
    for (const tag of doc.tags) expect(tag.description, tag.name).not.toBe("");
    expect(doc.info.license?.name).toBeTruthy();
  });

  it("lists per operation only the statuses it can answer, each one the error catalogue gives", () => {
    /** The code of a documented error answer's example. */
    const codeOf = (answer: unknown) =>
      (answer as { content?: Record<string, { example?: { errorDetails?: { code: string }[] } }> }).content?.[
        "application/json"
      ]?.example?.errorDetails?.[0]?.code;
    type Documented = { requestBody?: unknown; responses: Record<string, unknown> };
    const catalogued = new Set(Object.values(ERROR_CODES).map(({ status }) => String(status)));
    const paths = committed.paths as unknown as Record<string, Record<string, Documented>>;
    const wrong = Object.entries(paths).flatMap(([path, byMethod]) =>
      Object.entries(byMethod).flatMap(([method, operation]) => {
        const statuses = Object.keys(operation.responses).filter((status) => status !== "200");
        const writes = !onlyReads(method, path);
        const problems = [
          ...statuses.filter((status) => !catalogued.has(status)).map((status) => `${status} is no code's`),
          // A read naming two resources (`/folders/{userId}/{folderId}`) may find them in two groups: 409;
          // an Idempotency-Key's conflict (422) comes only from a write (a read's own 422 says otherwise).
          ...(writes
            ? []
            : statuses
                .filter(
                  (s) =>
                    (s === "422" && codeOf(operation.responses[s]) === "idempotency_conflict") ||
                    (s === "409" && (path.match(/\{\w+Id\}/g) ?? []).length < 2),
                )
                .map((s) => `${s} from a read`)),
          ...(operation.requestBody ? [] : statuses.filter((s) => s === "413").map(() => "413 without a body")),
          ...(writes && !statuses.includes("409") ? ["a write without 409"] : []),
        ];
        return problems.map((problem) => `${method.toUpperCase()} ${path}: ${problem}`);
      }),
    );
    expect(wrong).toEqual([]);
    // What the integrators saw: every GET listed 409 and 413.
    expect(Object.keys(paths["/rest/v1/ads"]?.get?.responses ?? {})).not.toContain("409");
    expect(Object.keys(paths["/rest/v1/ads"]?.post?.responses ?? {})).toEqual(expect.arrayContaining(["409", "413"]));
  });

  it("shows the catalogue by examples taken from it, with the real types and units", async () => {
    const schemas = committed.components.schemas as unknown as Record<string, { example?: unknown }>;
    const category = schemas.Category?.example as { categoryId: number; groupId: number; descriptions: unknown[] };
    const entry = schemas.CatalogueEntry?.example as {
      categoryId: number;
      attributes: { portal: string; attributes: Record<string, unknown>[] }[];
    };
    const key = (await newClient()).key;
    expect((await call("GET", `/categories/${category.categoryId}`, { key })).body.data[0]).toMatchObject(category);
    const real = await call("POST", "/attributes/", { key, body: { categoryId: [entry.categoryId] } });
    const realSet = real.body.data[0]?.attributes.find((set) => set.portal === entry.attributes[0]?.portal);
    for (const definition of entry.attributes[0]?.attributes ?? []) {
      const { values: _values, ...rest } = definition;
      expect(realSet?.attributes.find((d) => d.key === definition.key)).toMatchObject(rest);
    }
    const group = schemas.Group?.example as { groupId: number; descriptions: unknown[] };
    const groups = await call("POST", "/groups/", { key, body: { groupId: [group.groupId] } });
    expect(groups.body.data[0]?.descriptions).toEqual(group.descriptions);
  });

  it("is the committed openapi/openapi.json (refresh it with npm run openapi)", async () => {
    const { servers: _servers, ...served } = (await call("GET", "/openapi.json")).body as unknown as Record<
      string,
      unknown
    >;
    const { servers: _default, ...expected } = committed as Record<string, unknown>;
    expect(served).toEqual(expected);
  });

  it("has a reference page that loads nothing from another origin, with the renderer pinned", () => {
    // Served by Workers Static Assets at /docs (the browser test opens it under wrangler dev).
    const scripts = [...docsPage.matchAll(/<script (?:type="module" )?src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(["/docs/scalar.js", "/docs/init.js"]);
    expect(docsPage).toMatch(/Content-Security-Policy[\s\S]*default-src 'self'/);
    expect(docsPage).not.toMatch(/https?:\/\//);
    for (const option of [
      'fetch("/rest/v1/openapi.json")',
      'fetch("/docs/guide.md")',
      "withDefaultFonts: false",
      "telemetry: false",
      "agent: { disabled: true }",
      "mcp: { disabled: true }",
      'showToolbar: "never"',
      'preferredSecurityScheme: "bearerAuth"',
    ])
      expect(docsInit).toContain(option);
    expect(packageJson.devDependencies["@scalar/api-reference"]).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
