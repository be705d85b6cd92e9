import { createExecutionContext, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { expect } from "vitest";
import type { ApiSchema } from "../src/app";
import { getDb } from "../src/db/client";
import { publishJobs } from "../src/db/schema";
import type { Env } from "../src/env";
import { ERROR_CODE_NAMES, ERROR_CODES, type ErrorCode, type ErrorDetail } from "../src/lib/errors";
import type { Marketplace } from "../src/lib/vocabulary";
import { createApiClient, type NewClient } from "../src/services/accounts";
import { type NewJob, publishMessage, runPublishJobs } from "../src/services/publishing";
import { jobContext } from "../src/services/shared";
import worker from "../src/worker";
import { marketplace } from "./fixtures/marketplace";

export const BASE = "http://api.test/rest/v1";

let clientSeq = 0;

/** A fresh API client with its own key (and so its own rate-limit bucket). */
export async function newClient(options: Partial<NewClient> = {}) {
  clientSeq += 1;
  return createApiClient(getDb(env.DB), {
    name: `test-${Date.now()}-${clientSeq}-${Math.random().toString(36).slice(2)}`,
    // Tests are not about the rate limit unless they say so.
    rate: 1000,
    burst: 1000,
    ...options,
  });
}

/** The pair of clients most tests act as: a partner client and an internal one, each with its own key. */
export async function twoClients() {
  const [partner, internal] = await Promise.all([newClient({ partner: true }), newClient({ internal: true })]);
  return { key: partner.key, internalKey: internal.key };
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  /** The Worker's bindings for this call (default: the test pool's own, with its live queue). */
  env?: Env;
}

/** The schema's patterns start with the base path; tests write paths below it. */
type StripBase<Pattern extends string> = Pattern extends `/rest/v1${infer Rest}` ? Rest : Pattern;
/** A path as written in a test, without its query and trailing slash. */
type Bare<P extends string> = P extends `${infer Path}?${string}` ? Bare<Path> : P extends `${infer Path}/` ? Path : P;
type Segments<S extends string> = S extends `${infer Head}/${infer Tail}` ? [Head, ...Segments<Tail>] : [S];
/** Whether a path's segments fit a Hono route pattern's (`/users/:userId`): same count, literals equal. */
type Fits<Path extends string[], Pattern extends string[]> = Path extends [infer P, ...infer PathRest extends string[]]
  ? Pattern extends [infer R, ...infer PatternRest extends string[]]
    ? R extends `:${string}`
      ? Fits<PathRest, PatternRest>
      : P extends R
        ? Fits<PathRest, PatternRest>
        : false
    : false
  : Pattern extends []
    ? true
    : false;
/** What the route answers for `method path`, or an envelope of unknown data when no route matches. */
type AnswerBody<M extends string, P extends string> = {
  [Pattern in keyof ApiSchema & string]: Fits<Segments<Bare<P>>, Segments<StripBase<Pattern>>> extends true
    ? `$${Lowercase<M>}` extends keyof ApiSchema[Pattern]
      ? ApiSchema[Pattern][`$${Lowercase<M>}`] extends { output: infer O }
        ? O
        : never
      : never
    : never;
}[keyof ApiSchema & string];
type Envelope = {
  result: boolean;
  errors: string[];
  data: any;
  errorDetails?: ErrorDetail[];
  [extra: string]: unknown;
};

export interface Answer<T = Envelope> {
  status: number;
  headers: Headers;
  body: T & { errorDetails?: ErrorDetail[] };
}

/** Calls the Worker exactly as a client would, and reads the envelope, typed as the route answers. */
export async function call<M extends string, P extends string>(
  method: M,
  path: P,
  options: CallOptions = {},
): Promise<Answer<[AnswerBody<M, P>] extends [never] ? Envelope : AnswerBody<M, P>>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: BodyInit | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const url = path.startsWith("http") ? path : `${BASE}${path}`;
  const request = new Request(url, { method, headers, body });
  const response = options.env
    ? await worker.fetch(request, options.env, createExecutionContext())
    : await exports.default.fetch(request);
  const text = await response.text();
  let parsed: Envelope;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`not JSON (${response.status}): ${text.slice(0, 200)}`);
  }
  return { status: response.status, headers: response.headers, body: parsed as never };
}

/** A value the test needs to exist: asserted, then typed as present. */
export function defined<T>(value: T | null | undefined, what = "the value"): T {
  expect(value, `${what} is missing`).toBeDefined();
  expect(value, `${what} is missing`).not.toBeNull();
  return value as T;
}

/** Asserts the spec's envelope and returns it. */
export function expectEnvelope(answer: Answer, status: number, result = status === 200) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.body.result).toBe(result);
  expect(Array.isArray(answer.body.errors)).toBe(true);
  expect(answer.body).toHaveProperty("data");
  if (!result) expect(answer.body.errors.length).toBeGreaterThan(0);
  // Every error answer carries the same problems with their codes, one per message in the same order.
  if (status >= 400) {
    const details = answer.body.errorDetails as ErrorDetail[];
    expect(details.map((d) => d.message)).toEqual(answer.body.errors);
    for (const d of details) expect(ERROR_CODE_NAMES).toContain(d.code);
    expect(ERROR_CODES[details[0]?.code as ErrorCode]?.status).toBe(status);
  }
  return answer.body;
}

/** Asserts a failed answer whose problems all carry `code` (whose status is the answer's). */
export function expectError(answer: Answer, code: ErrorCode) {
  const body = expectEnvelope(answer, ERROR_CODES[code].status, false);
  expect((body.errorDetails as ErrorDetail[]).map((d) => d.code)).toEqual(body.errors.map(() => code));
  return body.errorDetails as ErrorDetail[];
}

/** For tests that call a purpose-built app directly rather than the Worker. */
export const executionContext = () => createExecutionContext();

/** A valid user body; tests override what they are about. */
let externalUserSeq = 1_000_000;
const nextExternalUserId = () => {
  externalUserSeq += 1;
  return externalUserSeq;
};

/** A user as a client creates it; each gets its own externalUserId (unique per client). */
export const userBody = (overrides: Record<string, unknown> = {}) => ({
  externalUserId: nextExternalUserId(),
  companyName: "Garage De Vries",
  firstName: "Jan",
  lastName: "de Vries",
  address: "Dorpsstraat",
  houseNumber: "12a",
  postalCode: "1234ab",
  city: "Utrecht",
  county: "UT" as const,
  email: "jan@garagedevries.nl",
  phone: "030-1234567",
  ...overrides,
});

export const contactBody = (userId: number, overrides: Record<string, unknown> = {}) => ({
  userId,
  name: "Showroom Noord",
  address: "Industrieweg",
  houseNumber: "7",
  postalCode: "9711 AA",
  city: "Groningen",
  county: "GR",
  phone: "050-7654321",
  ...overrides,
});

/** Creates a user through the API and returns the answer's data. */
export async function createUser(key: string, overrides: Record<string, unknown> = {}) {
  const answer = await call("POST", "/users/", { key, body: userBody(overrides) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** Category 9301 (Banken, group 93 Huis en Inrichting): free to place, condition mandatory on the portals. */
export const SOFA_CATEGORY = 9301;
/** Category 9204 (Brommers): placing an ad costs money on portal_a. */
export const PAID_CATEGORY = 9204;
/** Category 9101 (Personenauto's, automotive group 91). */
export const CAR_CATEGORY = 9101;

/** The product-safety attributes portal_a asks of business sellers. */
export const GPSR_VALUES = [
  { key: "manufacturerTradename", value: "Meubelfabriek B.V." },
  { key: "manufacturerAddress", value: "Fabrieksweg 1, 1234 AB Utrecht" },
  { key: "manufacturerEmail", value: "veiligheid@meubelfabriek.nl" },
];

/** What portal_a requires of a passenger car. */
export const CAR_ATTRIBUTES = [
  {
    portal: "portal_a",
    locale: "nl_NL",
    values: [
      { key: "brand", value: "Volkswagen" },
      { key: "model", value: "Golf" },
      { key: "mileage", value: 85000 },
      { key: "year", value: 2018 },
      { key: "fuel", value: "benzine" },
    ],
  },
];

/**
 * The attribute sets the portals require of a category, so that a test ad can be published: the
 * automotive group (91) asks portal_a for the car's details; every other category asks both portals
 * for its condition, and portal_a business sellers for the product-safety data; an unknown category
 * gets none.
 */
export const requiredAttributes = (categoryId: unknown) =>
  typeof categoryId !== "number" || categoryId < 9100 || categoryId >= 10000
    ? []
    : Math.floor(categoryId / 100) === 91
      ? CAR_ATTRIBUTES
      : [
          { portal: "portal_a", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }, ...GPSR_VALUES] },
          { portal: "portal_b", locale: "nl_NL", values: [{ key: "condition", value: "gebruikt" }] },
        ];

export const adBody = (userId: number, overrides: Record<string, unknown> = {}) => ({
  userId,
  externalAdId: 501,
  categoryId: SOFA_CATEGORY,
  title: "Leren bank, drie zits",
  description: "Mooie <b>leren</b> bank in goede staat.",
  price: { model: "fixed", price: 25000 },
  attributes: requiredAttributes(overrides.categoryId ?? SOFA_CATEGORY),
  ...overrides,
});

/** Creates an ad through the API and returns the answer's data. */
export async function createAd(key: string, userId: number, overrides: Record<string, unknown> = {}) {
  const answer = await call("POST", "/ads/", { key, body: adBody(userId, overrides) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** Polls `check` until it returns a value other than undefined (queue work runs beside the tests). */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what = "the condition",
  tries = 150,
): Promise<T> {
  for (let i = 0; i < tries; i += 1) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Activates a user with the token of its creation. */
export async function activate(key: string, user: { userId: number; activation: { activationtoken: string } }) {
  const answer = await call("POST", "/user/activate/", {
    key,
    body: { userId: user.userId, activationtoken: user.activation.activationtoken },
  });
  expect(answer.status).toBe(200);
}

/** A page's first form: where it posts and its hidden inputs. */
export function formOf(page: string): { action: string; fields: Record<string, string> } {
  const form = /<form method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(page);
  if (!form) throw new Error("the page has no form");
  const decodeEntities = (text: string) =>
    text
      .replaceAll("&amp;", "&")
      .replaceAll("&quot;", '"')
      .replaceAll("&#39;", "'")
      .replaceAll("&lt;", "<")
      .replaceAll("&gt;", ">");
  const fields: Record<string, string> = {};
  for (const input of (form[2] as string).matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g))
    fields[input[1] as string] = decodeEntities(input[2] as string);
  return { action: decodeEntities(form[1] as string), fields };
}

/** Posts a simulator page's form as a browser would (form-encoded, redirects not followed). */
export async function submitForm(origin: string, page: string, values: Record<string, string>, ip = "192.0.2.1") {
  const { action, fields } = formOf(page);
  return exports.default.fetch(
    new Request(new URL(action, origin), {
      method: "POST",
      body: new URLSearchParams({ ...fields, ...values }),
      headers: { "CF-Connecting-IP": ip },
      redirect: "manual",
    }),
  );
}

let accountSeq = 0;

/** A marketplace account's sign-in at the simulator. */
export interface MarketplaceCredentials {
  username: string;
  password: string;
}

/**
 * Connects a user to a marketplace through the simulator's OAuth flow, as a browser and a client would:
 * the consent page, signed in as `credentials` or, without them, through its "create a new account"
 * link (a fresh marketplace account per user, so tests count listings per account), the form posted,
 * the code and state from the redirect sent back. Answers the API's answer to the code and the
 * credentials of the account.
 */
export async function authorizeAccount(
  key: string,
  userId: number,
  portal: "portal_a" | "portal_b",
  credentials?: MarketplaceCredentials,
) {
  const started = await call("POST", `/oauth/${userId}/${portal}/`, { key });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const consent = await exports.default.fetch(new Request(started.body.data.redirect));
  expect(consent.status).toBe(200);
  const consentPage = await consent.text();
  const origin = new URL(started.body.data.redirect).origin;
  accountSeq += 1;
  const account = credentials ?? {
    username: `seller-${userId}-${accountSeq}-${Math.random().toString(36).slice(2, 8)}`,
    password: "secret-password",
  };
  let form = consentPage;
  if (!credentials) {
    const signupHref = /<a id="signup" href="([^"]*)"/.exec(consentPage)?.[1]?.replaceAll("&amp;", "&");
    form = await (await exports.default.fetch(new Request(new URL(signupHref as string, origin)))).text();
  }
  const approval = await submitForm(origin, form, { ...account });
  // Read to its end: an unread body holds one of the six connections a Worker may have open.
  expect(approval.status, await approval.text()).toBe(302);
  const callback = new URL(approval.headers.get("Location") as string);
  const answer = await call("PUT", `/oauth/${userId}/${portal}/`, {
    key,
    body: { code: callback.searchParams.get("code"), state: callback.searchParams.get("state") },
  });
  return { answer, credentials: account };
}

/** Connects a user to a new marketplace account (see `authorizeAccount`); answers the connection. */
export async function connectPortal(key: string, userId: number, portal: "portal_a" | "portal_b") {
  const { answer } = await authorizeAccount(key, userId, portal);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data;
}

/** An active user, connected to portal_a, with `credit` cents in the wallet (credited by an internal client). */
export async function connectedSeller(
  key: string,
  internalKey: string,
  credit = 0,
  overrides: Record<string, unknown> = {},
) {
  return (await connectedSellerAccount(key, internalKey, credit, overrides)).userId;
}

/** `connectedSeller`, answering the credentials of its marketplace account as well. */
export async function connectedSellerAccount(
  key: string,
  internalKey: string,
  credit = 0,
  overrides: Record<string, unknown> = {},
) {
  const user = await createUser(key, { companyName: null, ...overrides });
  await activate(key, user);
  const { answer, credentials } = await authorizeAccount(key, user.userId, "portal_a");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  if (credit)
    await call("POST", "/wallet/", {
      key: internalKey,
      body: { userId: user.userId, amount: credit, description: "opwaardering" },
    });
  return { userId: user.userId as number, credentials };
}

/**
 * The Worker's bindings with a queue that drops every message: rows are written and nothing is
 * delivered (a message lost to a crash, or a job held still while a test looks at it).
 */
export const withoutMessages = (base: Env = env) =>
  ({ ...base, JOBS: { send: async () => {}, sendBatch: async () => {} } }) as unknown as Env;

/**
 * Runs one item's job as the consumer does, from the message the API sends for it; throws what would
 * make the queue retry the message.
 */
export async function runPublishJob(base: Env, itemId: number, requestId?: string): Promise<void> {
  const item = await getDb(base.DB).select().from(publishJobs).where(eq(publishJobs.id, itemId)).get();
  const [outcome] = await runPublishJobs(jobContext(base, requestId), {
    messages: [publishMessage(defined(item), requestId)],
  });
  if (outcome?.status === "rejected") throw outcome.reason;
}

/** The listings the user's account at a portal holds at the simulator, with what arrived. */
export async function listingsAtMarketplace(key: string, userId: number, portal: Marketplace = "portal_a") {
  const connection = await call("GET", `/oauth/${userId}/${portal}/`, { key });
  return marketplace(portal).listings(connection.body.data.externalUserId as number);
}

/** Placement intents for ads on portal_a, as POST /publish/ writes them. */
export const placements = (userId: number, adIds: number[], cost = 300): NewJob[] =>
  adIds.map((adId) => ({
    adId,
    userId,
    portal: "portal_a",
    action: "publish",
    images: true,
    cost,
    payerId: userId,
    description: `plaatsen portal_a adId ${adId}`,
  }));

/**
 * A seller with `count` paid ads on portal_a published in batches of 100: every tenth from the fourth is
 * refused by the simulator (`[reject]`), every tenth from the eighth fails twice first (`[flaky]`).
 */
export async function publishMixedAds(key: string, internalKey: string, count = 200) {
  const userId = await connectedSeller(key, internalKey, 1_000_000);
  const adIds: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const title = i % 10 === 3 ? `Brommer ${i} [reject]` : i % 10 === 7 ? `Brommer ${i} [flaky]` : `Brommer ${i}`;
    adIds.push((await createAd(key, userId, { categoryId: 9204, title, externalAdId: i })).adId);
  }
  for (let i = 0; i < adIds.length; i += 100)
    await call("POST", "/publish/batch", { key, body: { userId, adId: adIds.slice(i, i + 100), portal: "portal_a" } });
  return { userId, adIds };
}

/**
 * A D1 binding whose every round trip to the database (each `batch`, and each statement run on its own:
 * `all`, `run`, `first`, `raw`) first awaits `before`: a test counts them, holds them still, or hands
 * their order to fast-check's scheduler. Sessions (D1 Sessions, which each request opens) are
 * intercepted like the binding.
 */
export function interceptD1(
  target: D1Database,
  before: (kind: "batch" | "statement", sql: string[]) => Promise<void> | void,
) {
  // The runtime's batch takes its own statement objects, not proxies of them; each proxy knows its SQL.
  const unwrapped = new WeakMap<object, D1PreparedStatement>();
  const sqlOf = new WeakMap<object, string>();
  const statement = (prepared: D1PreparedStatement, query: string): D1PreparedStatement => {
    const proxy = new Proxy(prepared, {
      get(s, property) {
        const member = Reflect.get(s, property);
        if (typeof member !== "function") return member;
        if (["all", "run", "first", "raw"].includes(String(property)))
          return async (...args: unknown[]) => {
            await before("statement", [query]);
            return member.apply(s, args);
          };
        // bind() answers a new statement: it is intercepted too.
        return (...args: unknown[]) => {
          const result = member.apply(s, args);
          return result instanceof Object && "bind" in result
            ? statement(result as D1PreparedStatement, query)
            : result;
        };
      },
    });
    unwrapped.set(proxy, prepared);
    sqlOf.set(proxy, query);
    return proxy;
  };
  const database = <T extends D1Database | D1DatabaseSession>(d1: T): T =>
    new Proxy(d1, {
      get(d1Target, property) {
        const value = Reflect.get(d1Target, property);
        if (property === "batch")
          return async (statements: D1PreparedStatement[]) => {
            await before(
              "batch",
              statements.map((s) => sqlOf.get(s) ?? ""),
            );
            return d1Target.batch(statements.map((s) => unwrapped.get(s) ?? s));
          };
        if (property === "prepare") return (query: string) => statement(d1Target.prepare(query), query);
        if (property === "withSession")
          return (constraint?: string) => database((d1Target as D1Database).withSession(constraint));
        return typeof value === "function" ? value.bind(d1Target) : value;
      },
    });
  return database(target);
}

/** A D1 binding that counts round trips to the database. Services given `getDb(counter.d1)` are measured. */
export function countingD1(target: D1Database) {
  const counter = {
    roundTrips: 0,
    reset: () => (counter.roundTrips = 0),
    d1: interceptD1(target, () => {
      counter.roundTrips += 1;
    }),
  };
  return counter;
}

/** The wallet balance of a user, in cents. */
export const walletBalance = async (key: string, userId: number) =>
  (await call("GET", `/wallet/${userId}`, { key })).body.data.balance as number;

/** The publish status of an ad on a portal, as GET /status/ shows it. */
export const publicationOf = async (key: string, userId: number, adId: number, portal = "portal_a") => {
  const answer = await call("GET", `/status/${userId}/${adId}`, { key });
  return answer.body.data[0]?.portals.find((p: { portal: string }) => p.portal === portal)?.publish;
};

/** The publish status once the ad's job on the portal is neither pending nor processing. */
export const settledPublication = (key: string, userId: number, adId: number, portal = "portal_a") =>
  eventually(
    async () => {
      const publish = await publicationOf(key, userId, adId, portal);
      return publish?.pending || publish?.processing ? undefined : publish;
    },
    `ad ${adId} on ${portal} to settle`,
    300,
  );

/** Milliseconds from a website publish to its listing live, as the client sees it. */
export async function publicationTime(apiKey: string, userId: number) {
  const ad = await createAd(apiKey, userId);
  const started = Date.now();
  expectEnvelope(
    await call("POST", "/publish/", { key: apiKey, body: { userId, adId: ad.adId, portal: "website" } }),
    200,
  );
  const publish = await settledPublication(apiKey, userId, ad.adId, "website");
  expect(publish?.active).toBe(true);
  return Date.now() - started;
}
