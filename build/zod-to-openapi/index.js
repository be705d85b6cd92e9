// @asteasolutions/zod-to-openapi, as the Worker bundles it (wrangler.toml `alias`). The production Worker
// serves the committed OpenAPI document (its `define` sets globalThis.OPENAPI_DOCUMENTED to false), so
// there nothing builds one and the bundler drops the package: schemas keep `.openapi()` (metadata for the
// document only: it answers the schema itself), routes are registered into a registry that keeps
// nothing, and building a document throws. Everywhere else this is the package itself.
import * as documented from "../../node_modules/@asteasolutions/zod-to-openapi/dist/index.mjs";
import { unavailable } from "../zod/unavailable.js";

function extendWithoutDocument(zod) {
  if (typeof zod.ZodType.prototype.openapi === "function") return;
  zod.ZodType.prototype.openapi = function openapi() {
    return this;
  };
}

class RegistryWithoutDocument {
  definitions = [];
  register(_refId, schema) {
    return schema;
  }
  registerPath() {}
  registerWebhook() {}
  registerComponent() {}
  registerParameter(_refId, schema) {
    return schema;
  }
}

class GeneratorWithoutDocument {
  generateDocument = unavailable;
}

export const extendZodWithOpenApi =
  globalThis.OPENAPI_DOCUMENTED === false ? extendWithoutDocument : documented.extendZodWithOpenApi;
export const OpenAPIRegistry =
  globalThis.OPENAPI_DOCUMENTED === false ? RegistryWithoutDocument : documented.OpenAPIRegistry;
export const OpenApiGeneratorV3 =
  globalThis.OPENAPI_DOCUMENTED === false ? GeneratorWithoutDocument : documented.OpenApiGeneratorV3;
export const OpenApiGeneratorV31 =
  globalThis.OPENAPI_DOCUMENTED === false ? GeneratorWithoutDocument : documented.OpenApiGeneratorV31;
export const getOpenApiMetadata = globalThis.OPENAPI_DOCUMENTED === false ? () => ({}) : documented.getOpenApiMetadata;
