// Calling the API as a client does: clients and keys, typed calls, and the envelope checks.
import { createExecutionContext, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { z } from "@hono/zod-openapi";
import { expect, TestRunner } from "vitest";
import { type ApiSchema, app } from "../../src/app";
import type { Env } from "../../src/env";
import { ERROR_CODE_NAMES, ERROR_CODES, type ErrorCode, type ErrorDetail } from "../../src/lib/errors";

/** A problem as an answer carries it: its code a string the document lists (or a later one). */
type AnsweredDetail = z.infer<typeof ErrorDetail>;

import { createApiClient, type NewClient } from "../../src/services/accounts";
import { KnownEvent } from "../../src/services/events";
import { DEFAULT_TEST_TIMEOUT_MS } from "./timeouts";

export const BASE = "http://api.test/rest/v1";

let clientSeq = 0;

/** A fresh API client with its own key (and so its own rate-limit bucket). */
export async function newClient(options: Partial<NewClient> = {}) {
  clientSeq += 1;
  return createApiClient(env, {
    // On shard 1 unless a test places it: the tests read a client's rows from env.DB (test/shards has
    // clients on every shard).
    shard: 1,
    name: `test-${Date.now()}-${clientSeq}-${Math.random().toString(36).slice(2)}`,
    // Tests are not about the rate limit unless they say so: a batch costs a token per ad (at most 1,000).
    rate: 1000,
    burst: 100_000,
    ...options,
  });
}

/**
 * The pair of clients most tests act as: a partner client and an internal one, each with its own key, in
 * one client group (so the internal client's users may pay for the partner's), on `shard`.
 */
export async function twoClients(shard = 1) {
  const partner = await newClient({ partner: true, shard });
  const internal = await newClient({ internal: true, groupId: await groupOf(partner.client.id) });
  return { key: partner.key, internalKey: internal.key };
}

/** A client's group (`client_groups`). */
export async function groupOf(clientId: number): Promise<number> {
  const row = await env.DIRECTORY.prepare("SELECT group_id AS g FROM api_clients WHERE id = ?")
    .bind(clientId)
    .first<{ g: number }>();
  return defined(row, `client ${clientId}`).g;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  /**
   * The Worker's bindings for this call, exactly as given: its job queues receive what the API sends, not
   * the clients' lanes (default: the test pool's own, whose sends go to the lanes, src/jobs/handOver.ts).
   */
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
  errorDetails?: AnsweredDetail[];
  [extra: string]: unknown;
};

export interface Answer<T = Envelope> {
  status: number;
  headers: Headers;
  body: T & { errorDetails?: AnsweredDetail[] };
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
    ? await app.fetch(request, options.env, createExecutionContext())
    : await exports.default.fetch(request);
  const text = await response.text();
  let parsed: Envelope;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`not JSON (${response.status}): ${text.slice(0, 200)}`);
  }
  if (request.method === "GET" && new URL(url).pathname.startsWith("/rest/v1/events") && response.status === 200)
    expectTypedEvents(parsed.data);
  return { status: response.status, headers: response.headers, body: parsed as never };
}

/**
 * Every event a test reads from the feed has the `data` its type's schema gives (the OpenAPI document's
 * union): so each writer of events is held to the published shape wherever the suite makes one.
 */
export function expectTypedEvents(events: unknown) {
  const checked = z.array(KnownEvent).safeParse(events);
  expect(checked.success, checked.error ? z.prettifyError(checked.error) : "").toBe(true);
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
    const details = answer.body.errorDetails as AnsweredDetail[];
    expect(details.map((d) => d.message)).toEqual(answer.body.errors);
    for (const d of details) expect(ERROR_CODE_NAMES).toContain(d.code);
    expect(ERROR_CODES[details[0]?.code as ErrorCode]?.status).toBe(status);
  }
  return answer.body;
}

/** Asserts a failed answer whose problems all carry `code` (whose status is the answer's). */
export function expectError(answer: Answer, code: ErrorCode) {
  const body = expectEnvelope(answer, ERROR_CODES[code].status, false);
  expect((body.errorDetails as AnsweredDetail[]).map((d) => d.code)).toEqual(body.errors.map(() => code));
  return body.errorDetails as AnsweredDetail[];
}

/** For tests that call a purpose-built app directly rather than the Worker. */
export const executionContext = () => createExecutionContext();

/** What `eventually` leaves of the running test's time to fail in, naming what it waited for. */
const TO_SAY_WHY_MS = 1_000;

/**
 * When the running test's own time runs out (its timeout, counted from its start, less the moment it
 * needs to say why): the only bound on waiting, so a busy machine's slower queue work is waited for, and
 * a hang still fails naming what it waited for.
 */
function testDeadline(): number {
  const test = TestRunner.getCurrentTest();
  const started = test?.result?.startTime ?? Date.now();
  return started + (test?.timeout ?? DEFAULT_TEST_TIMEOUT_MS) - TO_SAY_WHY_MS;
}

/**
 * Polls `check` until it returns a value other than undefined (queue work runs beside the tests), for as
 * long as the running test has time.
 */
export async function eventually<T>(check: () => Promise<T | undefined>, what = "the condition"): Promise<T> {
  const deadline = testDeadline();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The D1 rows a response says its request read and wrote (its Server-Timing header). */
export function d1RowsOf(answer: Answer): { read: number; written: number } {
  const timing = defined(answer.headers.get("Server-Timing"), "Server-Timing");
  const [, read, written] = defined(/d1;desc="rows_read=(\d+) rows_written=(\d+)"/.exec(timing), "the d1 metric");
  return { read: Number(read), written: Number(written) };
}
