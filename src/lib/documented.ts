import { z } from "@hono/zod-openapi";

/**
 * A module's response schemas, which only the OpenAPI document reads: the production Worker serves the
 * committed document and never validates a response, so its build (wrangler `define`:
 * `globalThis.OPENAPI_DOCUMENTED` false) drops the function that builds them, as long as the call is
 * written `documentedSchemas(globalThis.OPENAPI_DOCUMENTED === false ? undefined : build())` with `build`
 * a top-level function of the module. There each schema reads as `z.unknown()`.
 */
export function documentedSchemas<T extends Record<string, unknown>>(schemas: T | undefined): T {
  return schemas ?? (new Proxy({}, { get: () => z.unknown() }) as T);
}
