/**
 * Examples for the OpenAPI document: every request body and response without one gets an example built
 * from its schema (a field's own `example`, else its default, const or first enum value, else a value of
 * its type that meets its bounds), so generated clients and the reference show a concrete payload.
 */
import { MARKETPLACES } from "./vocabulary";

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
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  prefixItems?: Schema[];
  pattern?: string;
  readOnly?: boolean;
}

type Components = Record<string, Schema>;
/** Deep enough for the nested list answers (the catalogue's is 12 levels), short of a cycle running away. */
const MAX_DEPTH = 24;
/** Values tried against a string's `pattern`: the formats our schemas constrain (dates, times, codes, links). */
const PATTERN_CANDIDATES = ["2026-01-31", "12:00", "NL", "1234 AB", "https://videos.example.com/clip.mp4", "text"];

/** A time as the API writes every time (a field named for one: `created`, `startDate`, `pausedUntil`, …). */
const TIME_FIELD = /^(created|updated|placed|due|nextAttempt|at)$|(Date|At|Until|Expire)$/;
const TIME_EXAMPLE = "2026-11-22 14:03:10";

/**
 * Realistic values by field name (a Dutch garage selling a scooter), used where they fit the field's
 * schema; ids and amounts plausible (amounts in cents), times in the API's format.
 */
const BY_NAME: Record<string, string | number> = {
  title: "Vespa Primavera 125 uit 2019",
  description: "Nette Vespa Primavera 125, eerste eigenaar, onderhoudsboekje aanwezig.",
  imagetext: "Als nieuw",
  url: "https://www.garagedevries.nl/aanbod/vespa-primavera",
  URL: "https://www.garagedevries.nl/fotos/vespa-voorkant.jpg",
  website: "https://www.garagedevries.nl/",
  video: "https://www.garagedevries.nl/video/vespa.mp4",
  redirect: "https://portal-a.example.com/oauth/authorize?client_id=classified-ads&state=8f3c2a",
  consentUrl: "https://api.example.com/rest/v1/oauth/1042/portal_a/",
  path: "fotos/vespa-voorkant.jpg",
  companyName: "Garage De Vries",
  name: "Garage De Vries",
  displayName: "Garage De Vries",
  firstName: "Jan",
  lastName: "de Vries",
  address: "Dorpsstraat",
  houseNumber: "12a",
  postalCode: "1234 AB",
  city: "Utrecht",
  phone: "030-1234567",
  fax: "030-1234568",
  cellular: "06-12345678",
  email: "jan@garagedevries.nl",
  manufacturerEmail: "info@piaggio.example.com",
  chathandle: "garagedevries",
  dateOfBirth: "1975-04-12",
  key: "condition",
  value: "gebruikt",
  label: "Gebruikt",
  categoryDescription: "Brommers",
  groupDescription: "Brommers, scooters en motoren",
  brands: "Piaggio",
  manufacturerTradename: "Piaggio & C. S.p.A.",
  manufacturerAddress: "Viale Rinaldo Piaggio 25, 56025 Pontedera, Italië",
  licensePlate: "DF-123-K",
  header: "<b>Garage De Vries</b>: al 40 jaar uw scooterspecialist",
  footer: "Bel of app ons: 06-12345678",
  reason: "rejected by portal: title is too short",
  errorReason: "rejected by portal: title is too short",
  lastError: "the portal answered 503",
  error: "the endpoint answered HTTP 500",
  failure: "HTTP 500: the feed answered 500",
  disabledReason: "the endpoint answered 410 Gone",
  pausedReason: "5 or more deliveries in a row failed (last: HTTP 503)",
  notRetryableReason: "a newer job of this listing replaced it",
  message: "Is deze Vespa nog beschikbaar?",
  action: "plaatsen",
  feature: "omhoogplaatsen",
  activationtoken: "6f1d2c9e4b7a8d3f0c5e2a1b9d8c7e6f",
  accesstoken: "b7e4c1a9d2f8e3b6a5c4d1e2f3a4b5c6",
  // A cursor as GET /ads/ hands it out (base64url of {"page":2,"after":1025}).
  nextCursor: "eyJwYWdlIjoyLCJhZnRlciI6MTAyNX0",
  accessToken: "at_4b9f2c7e1d8a3f6b",
  refreshToken: "rt_8d3a6f1c9e2b7d4a",
  scope: "listings bids statistics",
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  ip: "192.0.2.10",
  date: "2026-11-22",
  environment: "production",
  version: "1.0.0",
  migration: "0019_keyword_prefix_index.sql",
  unit: "views",
  county: "UT",
  country: "NL",
  time: "09:30",
  portal: MARKETPLACES[0],
  dayOfWeek: "monday",
  locale: "nl_NL",
  types: "publish.active",
  gender: "M",
  model: "fixed",
  values: "gebruikt",
  code: "c0d3-7f2a9b41e6d8",
  state: "8f3c2a61d9b04e7f",
  messageId: "evt_4101",
  dateStart: "2026-11-01",
  dateEnd: "2026-11-22",
  userId: 1042,
  mainUserId: 1042,
  walletUserId: 1042,
  clientId: 3,
  externalUserId: 5001,
  adId: 20317,
  externalAdId: 778,
  remoteAdId: 100231,
  contactId: 311,
  folderId: 12,
  taskId: 7,
  manufacturerId: 5,
  webhookId: 3,
  deliveryId: 17,
  eventId: 4101,
  queueItemId: 88412,
  retryOf: 88410,
  jobId: 5120,
  categoryId: 9204,
  groupId: 92,
  bidId: 100000,
  price: 150000,
  minimumBid: 120000,
  shippingCosts: 695,
  retail: 179900,
  retailPrice: 179900,
  amount: 27000,
  balance: 84500,
  cost: 295,
  cents: 295,
  priceInternal: 0,
  priceExternal: 295,
  priceTotal: 295,
  priceNative: 250,
};

/** Whether a value from BY_NAME meets the field's schema (its type, pattern, length and bounds). */
function fits(value: string | number | undefined, schema: Schema, type: string | undefined): boolean {
  if (value === undefined) return false;
  if (typeof value === "number")
    return (
      (type === "integer" || type === "number") &&
      value >= (schema.minimum ?? Number.NEGATIVE_INFINITY) &&
      value <= (schema.maximum ?? Number.POSITIVE_INFINITY)
    );
  return (
    type === "string" &&
    value.length >= (schema.minLength ?? 0) &&
    value.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY) &&
    (!schema.pattern || new RegExp(schema.pattern).test(value)) &&
    (schema.format !== "email" || value.includes("@")) &&
    (!["uri", "url"].includes(schema.format ?? "") || value.startsWith("https://"))
  );
}

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
  const named = BY_NAME[name];
  if (fits(named, schema, type)) return named;
  switch (type) {
    case "object":
      return Object.fromEntries(
        // What a write takes only because its responses carry it (read-only fields) is left out.
        Object.entries(schema.properties ?? {})
          .filter(([, property]) => !property.readOnly)
          .map(([key, property]) => [key, sampleOf(property, components, depth + 1, key)]),
      );
    case "array": {
      // A list of problems is empty in an example: the examples are of things that went well.
      if (schema.maxItems === 0 || name === "errors" || name === "errorDetails") return [];
      if (schema.prefixItems) return schema.prefixItems.map((item) => sampleOf(item, components, depth + 1));
      const item = sampleOf(schema.items, components, depth + 1, name);
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
