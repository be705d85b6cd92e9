import { describe, expect, it } from "vitest";
import { app } from "../src/app";
import { call } from "./harness";

/** Every route the app serves, as `METHOD /path/{param}`, from Hono's own route table. */
function servedRoutes(): string[] {
  const routes = app.routes
    .filter((r) => r.method !== "ALL" && r.path.startsWith("/rest/v1/") && !r.path.endsWith("/openapi.json"))
    .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
  return [...new Set(routes)].sort();
}

describe("OpenAPI document", () => {
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

  it("serves the interactive reference", async () => {
    const { exports } = await import("cloudflare:workers");
    const response = await exports.default.fetch(new Request("http://api.test/docs"));
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toContain("text/html");
    expect(await response.text()).toContain("/rest/v1/openapi.json");
  });
});
