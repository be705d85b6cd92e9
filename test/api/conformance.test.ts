import { Validator } from "@cfworker/json-schema";
import fc from "fast-check";
import { generateSync } from "json-schema-faker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import validationGuide from "../../docs/validation.md?raw";
import committed from "../../openapi/openapi.json";
import { receiver, registerWebhook } from "../fixtures/hooks";
import { call, defined, newClient, twoClients } from "../harness/api";
import { contactBody, createAd, createUser, SOFA_CATEGORY } from "../harness/data";

/**
 * The document's conformance, as a client generated from it meets the API: for every operation, with a
 * partner's and an internal client's key on both shards, requests generated from the document's own
 * schemas (json-schema-faker, seeded by fast-check) — valid ones, and ones with one value broken. A valid
 * request never answers 5xx nor 400 (unless its rule is one of CROSS_FIELD_RULES, which JSON Schema cannot
 * state); every answer has a status, content type and body the document declares; a broken value is
 * refused with 400 naming its field. Ids of real resources stand in for generated ones, so success paths
 * are reached.
 */

type Schema = Record<string, unknown> & {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  readOnly?: boolean;
  minimum?: number;
  maxLength?: number;
};
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: Schema;
}
interface Media {
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media>; headers?: Record<string, { required?: boolean }> }>;
}

const document = committed as unknown as { paths: Record<string, Record<string, Operation>>; components: unknown };
const BASE_PATH = "/rest/v1";

/**
 * The rules across fields, which a JSON Schema of one field cannot state (docs/validation.md, the one list
 * of them): a request valid by the document may be refused with these messages, item positions as `[]`.
 */
const CROSS_FIELD_RULES = [...validationGuide.matchAll(/^- `([^`]+)`/gm)].map(
  (match) =>
    new RegExp(
      `^${defined(match[1])
        .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        .replace(/<id>/g, "\\d+")
        .replace(/<\w+>/g, ".+?")}$`,
    ),
);
const unlisted = (message: string) => !CROSS_FIELD_RULES.some((rule) => rule.test(message.replace(/\[\d+\]/g, "[]")));

/** The resource ids a request names, as the seeded resources of its caller give them. */
type Seeds = Record<string, number>;
interface Caller {
  name: string;
  key: string;
  seeds: Seeds;
}

const operations = Object.entries(document.paths)
  .flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  )
  .filter((o) => !o.path.endsWith("/health"))
  // Deletions last, so the seeded resources serve every other operation first.
  .sort((a, b) => Number(a.method === "DELETE") - Number(b.method === "DELETE"));

const withComponents = (schema: Schema) => ({ ...schema, components: document.components });
const generate = (schema: Schema, seed: number) =>
  generateSync(withComponents(schema), { seed, optionalsProbability: 0.5, maxDefaultItems: 2 });

const primitive = (schema: Schema) => {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  return type === "string" || type === "integer" || type === "number" || type === "boolean" ? type : undefined;
};

/** A value that breaks `schema` and how: a wrong type, an unknown member, a number below its minimum. */
function broken(schema: Schema, inQuery: boolean): unknown {
  if (schema.enum) return "zz-not-a-member";
  const type = primitive(schema);
  if (type === "integer" || type === "number") return typeof schema.minimum === "number" ? schema.minimum - 1 : "x";
  if (type === "boolean") return "maybe";
  if (type === "string")
    return typeof schema.maxLength === "number" ? "a".repeat(schema.maxLength + 1) : inQuery ? undefined : 1;
  return undefined;
}

interface Draft {
  method: string;
  /** The operation's path template, and the value of each of its parameters. */
  path: string;
  pathValues: Record<string, string>;
  query: URLSearchParams;
  headers: Record<string, string>;
  body?: unknown;
  rawBody?: string;
  /** The field a broken request broke. */
  broke?: string;
}

function draft(o: (typeof operations)[number], caller: Caller, seed: number, useSeeds: boolean): Draft {
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  const pathValues: Record<string, string> = {};
  let n = seed;
  // A body names the resource its path names, and the caller's own where it has one.
  const named: Record<string, unknown> = useSeeds ? { ...caller.seeds } : {};
  for (const p of o.operation.parameters ?? []) {
    n += 1;
    const seeded = useSeeds ? caller.seeds[p.name] : undefined;
    if (p.in === "path") {
      const value = seeded ?? generate(p.schema, n);
      named[p.name] = value;
      pathValues[p.name] = String(value);
    } else if (p.in === "query" && primitive(p.schema) && (p.required || n % 2 === 0)) {
      query.set(p.name, String(seeded ?? generate(p.schema, n)));
    } else if (p.in === "header" && (p.required || (p.name === "Idempotency-Key" && n % 3 === 0))) {
      headers[p.name] = String(generate(p.schema, n));
    }
  }
  const content = o.operation.requestBody?.content ?? {};
  const json = content["application/json"]?.schema;
  const result: Draft = { method: o.method, path: o.path, pathValues, query, headers };
  if (json) {
    const body = generate(json, seed);
    if (body && typeof body === "object" && !Array.isArray(body)) {
      const fields = body as Record<string, unknown>;
      for (const [name, value] of Object.entries(named))
        if (typeof fields[name] === "number") fields[name] = value;
        else if (Array.isArray(fields[name])) fields[name] = [value];
    }
    result.body = body;
  } else if (content["application/x-ndjson"]) {
    result.rawBody = "";
    headers["Content-Type"] = "application/x-ndjson";
  }
  return result;
}

/** The same request with one value broken, or undefined when the operation has none to break. */
function breakOne(d: Draft, o: (typeof operations)[number], pick: number): Draft | undefined {
  const candidates: { field: string; apply: (copy: Draft) => void }[] = [];
  for (const p of o.operation.parameters ?? []) {
    if (!primitive(p.schema)) continue;
    const value = broken(p.schema, true);
    if (value === undefined) continue;
    if (p.in === "query") candidates.push({ field: p.name, apply: (copy) => copy.query.set(p.name, String(value)) });
    // A path's id out of its range (0, below the minimum of 1): the segment is there, its value is not one.
    if (p.in === "path" && p.schema.minimum !== undefined)
      candidates.push({ field: p.name, apply: (copy) => (copy.pathValues[p.name] = String(value)) });
  }
  const schema = o.operation.requestBody?.content["application/json"]?.schema;
  const properties = schema?.properties ?? {};
  if (d.body && typeof d.body === "object" && !Array.isArray(d.body))
    for (const [name, property] of Object.entries(properties)) {
      if (property.readOnly) continue;
      const value = broken(property, false);
      if (value === undefined) continue;
      candidates.push({
        field: name,
        apply: (copy) => {
          copy.body = { ...(copy.body as object), [name]: value };
        },
      });
    }
  if (candidates.length === 0) return undefined;
  const chosen = defined(candidates[pick % candidates.length]);
  const copy: Draft = {
    ...d,
    pathValues: { ...d.pathValues },
    query: new URLSearchParams(d.query),
    headers: { ...d.headers },
    broke: chosen.field,
  };
  // Another request: not under the valid one's Idempotency-Key (that would be 422, the key's other request).
  delete copy.headers["Idempotency-Key"];
  chosen.apply(copy);
  return copy;
}

/** The request's path: its template with each parameter's value. */
const pathOf = (d: Draft) =>
  d.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(defined(d.pathValues[name])));

async function send(d: Draft, caller: Caller) {
  const search = d.query.size > 0 ? `?${d.query}` : "";
  return call(d.method, `http://api.test${pathOf(d)}${search}`, {
    key: caller.key,
    body: d.body,
    rawBody: d.rawBody,
    headers: d.headers,
  });
}

const validators = new Map<string, Validator>();
function validatorOf(schema: Schema, where: string) {
  let validator = validators.get(where);
  if (!validator) {
    validator = new Validator(withComponents(schema) as never, "2020-12", false);
    validators.set(where, validator);
  }
  return validator;
}

/** What the document declares of this answer, checked: status, content type, required headers, body. */
function expectDeclared(o: (typeof operations)[number], answer: Awaited<ReturnType<typeof send>>, what: string) {
  const declared = o.operation.responses[String(answer.status)] ?? o.operation.responses.default;
  expect(declared, `${what}: status ${answer.status} is not declared (${JSON.stringify(answer.body)})`).toBeDefined();
  const response = defined(declared);
  for (const [name, header] of Object.entries(response.headers ?? {}))
    if (header.required) expect(answer.headers.get(name), `${what}: header ${name}`).not.toBeNull();
  const media = response.content?.["application/json"];
  if (!media?.schema) return;
  expect(answer.headers.get("content-type"), what).toMatch(/^application\/json/);
  const verdict = validatorOf(media.schema, `${o.method} ${o.path} ${answer.status}`).validate(answer.body);
  expect(verdict.errors.slice(0, 3), `${what}: the body is not as declared`).toEqual([]);
}

const reached = new Map<string, number>();
let requests = 0;

async function seeded(name: string, key: string): Promise<Caller> {
  const user = await createUser(key);
  const ad = await createAd(key, user.userId);
  const contact = await call("POST", "/contacts/", { key, body: contactBody(user.userId) });
  const folder = await call("POST", "/folders/", { key, body: { userId: user.userId, description: "Voorraad" } });
  const task = await call("POST", "/tasks/", {
    key,
    body: { userId: user.userId, portal: "portal_a", time: "04:00", enabled: false },
  });
  const { webhookId } = await registerWebhook(key, receiver("ok").url);
  const sync = await call("POST", `/syncs/?userId=${user.userId}`, { key, body: { items: [] } });
  return {
    name,
    key,
    seeds: {
      taskId: defined(task.body.data[0]).taskId,
      webhookId,
      syncId: sync.body.data.syncId,
      userId: user.userId,
      adId: ad.adId,
      contactId: defined(contact.body.data[0]).contactId,
      folderId: defined(folder.body.data[0]).folderId,
      categoryId: SOFA_CATEGORY,
    },
  };
}

const callers: Caller[] = [];

beforeAll(async () => {
  for (const shard of [1, 2]) {
    const { key, internalKey } = await twoClients(shard);
    callers.push(await seeded(`partner@${shard}`, key), await seeded(`internal@${shard}`, internalKey));
  }
  // A client of its own for reading the shared catalogue without a user.
  callers.push({ name: "bare", key: (await newClient()).key, seeds: { categoryId: SOFA_CATEGORY } });
});

afterAll(() => {
  const operationsReached = [...reached.values()].filter((n) => n > 0).length;
  console.log(
    `conformance: ${operations.length} operations, ${requests} requests, ${[...reached.values()].reduce((a, b) => a + b, 0)} success answers, ${operationsReached} operations answered 2xx`,
  );
});

describe("ids", () => {
  it("refuses an id outside the document's range (1 to 2^53 − 1) with 400 naming it, in a query or a path", async () => {
    const { key, seeds } = defined(callers[0]);
    for (const id of ["0", "-1", "9007199254740992", "1e3", "0x10", "x"]) {
      const paths = [
        [`/ads/?adId=${id}`, "adId"],
        [`/imagestatus/${seeds.userId}/${id}`, "adId"],
        [`/imagestatus/${id}/${seeds.adId}`, "userId"],
        [`/status/${seeds.userId}/${id}`, "adId"],
        [`/status/${id}/${seeds.adId}`, "userId"],
        [`/jobs/?userId=${id}`, "userId"],
      ] as const;
      for (const [path, field] of paths) {
        const answer = await call("GET", path, { key });
        expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(400);
        expect(
          answer.body.errorDetails?.map((d) => d.field),
          path,
        ).toContain(field);
      }
    }
  });
});

describe("a client validating answers by the document", () => {
  const responseSchema = (path: string, status: string) =>
    defined(document.paths[`${BASE_PATH}${path}`]?.get?.responses[status]?.content?.["application/json"]?.schema);

  it("reads a feed page holding an event type and an error code added after its version", async () => {
    const { key } = defined(callers[0]);
    // Real answers of this version, each given a value a later version may write.
    const page = (await call("GET", "/events/?after=0", { key })).body;
    const later = { eventId: 9, occurredAt: "2026-11-28 12:00:00", userId: 7, adId: 12, portal: null };
    page.data = [{ ...later, type: "listing.renewed", data: { until: "2027-01-01" } }];
    const feed = validatorOf(responseSchema("/events", "200"), "later event");
    expect(feed.validate(page).errors.slice(0, 3)).toEqual([]);
    const refusal = (await call("GET", "/events/?limit=x", { key })).body;
    refusal.errorDetails = [{ code: "limit_cooling_down", field: "limit", message: "limit: cooling down" }];
    const error = validatorOf(responseSchema("/events", "400"), "later code");
    expect(error.validate(refusal).errors.slice(0, 3)).toEqual([]);
    // What the document still refuses: an event without its fields, a detail without a code.
    expect(feed.validate({ ...page, data: [{ type: "listing.renewed" }] }).valid).toBe(false);
    expect(error.validate({ ...refusal, errorDetails: [{ message: "limit: cooling down" }] }).valid).toBe(false);
  });
});

describe("the rules across fields", () => {
  it("each one the list names is stated in its field's description in the document too", () => {
    // Every property and parameter whose description (or its schema's, through a $ref) cites the list.
    const citing = new Set<string>();
    const components = (document.components as { schemas: Record<string, Schema> }).schemas;
    const describes = (schema: Schema | undefined): boolean => {
      if (!schema) return false;
      if (String(schema.description ?? "").includes("docs/validation.md")) return true;
      const ref = (schema as { $ref?: string }).$ref;
      return ref ? describes(components[ref.split("/").pop() ?? ""]) : false;
    };
    const visit = (value: unknown): void => {
      if (!value || typeof value !== "object") return;
      const node = value as { properties?: Record<string, Schema>; name?: string; schema?: Schema };
      for (const [name, property] of Object.entries(node.properties ?? {}))
        if (describes(property) || describes((property as { items?: Schema }).items)) citing.add(name);
      if (node.name && (describes(node.schema) || describes(node as Schema))) citing.add(node.name);
      for (const child of Object.values(value)) visit(child);
    };
    visit(document);
    // A rule about the body as a whole, or about a value only the API writes (a cursor), has no field to cite it.
    const fields = [...validationGuide.matchAll(/^- `([^`:]+):/gm)]
      .map((match) => defined(match[1]).split(".").pop()?.replace("[]", "") ?? "")
      .filter((field) => field !== "body" && field !== "cursor" && !field.startsWith("<"));
    expect(fields.length).toBeGreaterThan(15);
    expect(fields.filter((field) => !citing.has(field))).toEqual([]);
  });
});

describe("the document's examples", () => {
  it("POST /ads/: its request example creates an ad, with the caller's own user, contact and folder", async () => {
    const caller = defined(callers[0]);
    const media = defined(document.paths[`${BASE_PATH}/ads`]?.post?.requestBody).content["application/json"];
    const example = (media as { example: object }).example;
    const answer = await call("POST", "/ads/", {
      key: caller.key,
      body: {
        ...example,
        userId: caller.seeds.userId,
        contactId: caller.seeds.contactId,
        folderId: caller.seeds.folderId,
      },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  });
});

describe("conformance to the OpenAPI document", () => {
  it.each(operations.map((o) => [`${o.method} ${o.path.slice(BASE_PATH.length)}`, o] as const))(
    "%s",
    async (name, o) => {
      reached.set(name, 0);
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 2 ** 30 }),
          fc.nat(3),
          fc.boolean(),
          fc.nat(),
          async (seed, callerIndex, useSeeds, pick) => {
            const caller = defined(callers[callerIndex]);
            const valid = draft(o, caller, seed, useSeeds);
            const answer = await send(valid, caller);
            requests += 1;
            const what = `${caller.name} ${valid.method} ${pathOf(valid)}?${valid.query} ${JSON.stringify(valid.body)}`;
            expect(answer.status, what).toBeLessThan(500);
            expectDeclared(o, answer, what);
            if (answer.status < 300) reached.set(name, (reached.get(name) ?? 0) + 1);
            // Refused for a rule the document does not state (a state of the world, an unknown reference,
            // answers with its own code).
            const unstated = (answer.body.errorDetails ?? []).filter(
              (e) => e.code === "validation_failed" && unlisted(e.message),
            );
            expect(unstated.map((e) => e.message).join("; "), `${what}: a valid request refused`).toBe("");
            const invalid = breakOne(valid, o, pick);
            if (!invalid) return;
            const refusal = await send(invalid, caller);
            requests += 1;
            const told = `${caller.name} ${invalid.method} ${pathOf(invalid)}?${invalid.query} ${JSON.stringify(invalid.body)} broke ${invalid.broke}`;
            expect(refusal.status, `${told}: ${JSON.stringify(refusal.body)}`).toBe(400);
            expectDeclared(o, refusal, told);
            const fields = refusal.body.errorDetails?.map((e) => e.field ?? "") ?? [];
            expect(
              fields.some((field) => field.split(/[.[]/)[0] === invalid.broke),
              `${told}: ${refusal.body.errors}`,
            ).toBe(true);
          },
        ),
        { numRuns: 6, includeErrorInReport: true },
      );
    },
  );
});
