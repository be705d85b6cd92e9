import committed from "../../openapi/openapi.json";

/** An operation of the OpenAPI document, as the tests that sweep every operation read it. */
export interface DocumentOperation {
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; schema?: { example?: unknown } }[];
  requestBody?: { content: Record<string, { example?: unknown }> };
}

/** Every operation of the committed document: its method, path template and description. */
const documentOperations = Object.entries(committed.paths as Record<string, Record<string, DocumentOperation>>).flatMap(
  ([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
);

/** The operations that take a key (all but the health route and the public ones). */
export const securedOperations = documentOperations.filter(({ operation }) => operation.security?.length !== 0);
