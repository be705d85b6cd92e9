/**
 * Examples for the OpenAPI document: every request body and response without one gets an example built
 * from its schema (a field's own `example`, else its default, const or first enum value, else a value of
 * its type that meets its bounds), so generated clients and the reference show a concrete payload.
 */
interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
  format?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  minItems?: number;
  maxItems?: number;
  prefixItems?: Schema[];
  pattern?: string;
}

type Components = Record<string, Schema>;
/** Deep enough for the nested list answers (the catalogue's is 12 levels), short of a cycle running away. */
const MAX_DEPTH = 24;
/** Values tried against a string's `pattern`: the formats our schemas constrain (dates, times, codes, links). */
const PATTERN_CANDIDATES = ["2026-01-31", "12:00", "NL", "1234 AB", "https://videos.example.com/clip.mp4", "text"];

/** A time as the API writes every time (a field named for one: `created`, `startDate`, `pausedUntil`, …). */
const TIME_FIELD = /^(created|updated|placed|due)$|(Date|At|Until|Expire)$/;
const TIME_EXAMPLE = "2026-11-22 14:03:10";

function stringExample(schema: Schema, name = ""): string {
  if (TIME_FIELD.test(name) && !schema.pattern) return TIME_EXAMPLE;
  if (schema.format === "date-time") return "2026-01-31T12:00:00Z";
  if (schema.format === "date") return "2026-01-31";
  if (schema.format === "email") return "jan@example.nl";
  if (schema.format === "uri" || schema.format === "url") return "https://www.example.com/";
  const { pattern } = schema;
  if (pattern) {
    const matching = PATTERN_CANDIDATES.find((candidate) => new RegExp(pattern).test(candidate));
    if (matching) return matching;
  }
  const text = "text";
  return text.padEnd(Math.max(schema.minLength ?? 0, text.length), "x");
}

export function sampleOf(schema: Schema | undefined, components: Components, depth = 0, name = ""): unknown {
  if (!schema || depth > MAX_DEPTH) return null;
  if (schema.$ref) return sampleOf(components[schema.$ref.split("/").at(-1) ?? ""], components, depth + 1, name);
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants?.length) {
    const chosen = variants.find((v) => v.type !== "null") ?? variants[0];
    return sampleOf(chosen, components, depth + 1, name);
  }
  if (schema.allOf?.length) {
    return Object.assign({}, ...schema.allOf.map((part) => sampleOf(part, components, depth + 1)));
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "object":
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, property]) => [
          key,
          sampleOf(property, components, depth + 1, key),
        ]),
      );
    case "array": {
      if (schema.maxItems === 0) return [];
      if (schema.prefixItems) return schema.prefixItems.map((item) => sampleOf(item, components, depth + 1));
      const item = sampleOf(schema.items, components, depth + 1);
      return Array.from({ length: Math.max(schema.minItems ?? 1, 1) }, () => item);
    }
    case "string":
      return stringExample(schema, name);
    case "integer":
    case "number":
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case "boolean":
      return true;
    default:
      return null;
  }
}

type MediaTypes = Record<string, { schema?: Schema; example?: unknown; examples?: unknown }>;
interface Operation {
  requestBody?: { content?: MediaTypes };
  responses?: Record<string, { content?: MediaTypes }>;
}

/** The document with an example on each JSON request body and response that has none. */
export function withExamples<D extends { paths?: object; components?: { schemas?: object } }>(document: D): D {
  const components = (document.components?.schemas ?? {}) as Components;
  const fill = (content: MediaTypes | undefined, success = false) => {
    const json = content?.["application/json"];
    if (json?.schema && json.example === undefined && json.examples === undefined) {
      json.example = sampleOf(json.schema, components);
      // A success reads as one: the envelope's result true, and no errors.
      const envelope = json.example as Record<string, unknown> | null;
      if (success && envelope && "result" in envelope)
        Object.assign(envelope, { result: true, errors: [] }, "errorDetails" in envelope ? { errorDetails: [] } : {});
    }
  };
  for (const pathItem of Object.values(document.paths ?? {}) as Record<string, Operation>[]) {
    for (const operation of Object.values(pathItem)) {
      fill(operation.requestBody?.content);
      for (const [status, response] of Object.entries(operation.responses ?? {}))
        fill(response.content, status.startsWith("2"));
    }
  }
  return document;
}
