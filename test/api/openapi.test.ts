import { describe, expect, it } from "vitest";
import committed from "../../openapi/openapi.json";
import packageJson from "../../package.json";
import docsInit from "../../public/docs/init.js?raw";
import docsPage from "../../public/docs.html?raw";
import { app } from "../../src/app";
import { call } from "../harness/api";

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
