import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { parse } from "smol-toml";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import journal from "../../migrations/meta/_journal.json";
import simulatorToml from "../../simulator/wrangler.toml?raw";
import { app } from "../../src/app";
import { runScheduled } from "../../src/cron";
import { ID_BLOCK_SIZE } from "../../src/db/ids";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { queueJobs } from "../../src/services/publishing";
import { type JobMessage, jobContext } from "../../src/services/shared";
import wranglerToml from "../../wrangler.toml?raw";
import { BASE, call, eventually, expectEnvelope, expectError, twoClients } from "../harness/api";
import { onTestShard } from "../harness/d1";
import { createAd, PAID_CATEGORY } from "../harness/data";
import { placements, runPublishJob, withoutMessages } from "../harness/jobs";
import { connectedSeller } from "../harness/marketplace";

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

afterEach(() => vi.restoreAllMocks());

/** Every JSON log line written from now on. */
function captureLogs() {
  const lines: Record<string, unknown>[] = [];
  const keep = (...args: unknown[]) => {
    try {
      lines.push(JSON.parse(String(args[0])));
    } catch {}
  };
  vi.spyOn(console, "log").mockImplementation(keep);
  vi.spyOn(console, "error").mockImplementation(keep);
  return lines;
}

/** An environment whose Analytics Engine dataset records what is written. */
function recordingMetrics() {
  const points: AnalyticsEngineDataPoint[] = [];
  const metricsEnv = { ...env, METRICS: { writeDataPoint: (point: AnalyticsEngineDataPoint) => points.push(point) } };
  return { points, env: metricsEnv as unknown as Env };
}

describe("correlated logs", () => {
  it("the request id reaches the consumer's line of the job it queued, and the cron's re-send keeps it", async () => {
    const lines = captureLogs();
    const userId = await connectedSeller(key, internalKey, 10_000);
    const ad = await createAd(key, userId);
    const queued = await call("POST", "/publish/", {
      key,
      body: { userId, adId: ad.adId, portal: "portal_a" },
      headers: { "X-Request-Id": "trace-publish-1" },
    });
    expectEnvelope(queued, 200);
    const line = await eventually(
      async () => lines.find((l) => l.msg === "job" && l.requestId === "trace-publish-1"),
      "the job's log line",
    );
    expect(line).toMatchObject({ kind: "placement", portal: "portal_a", adId: ad.adId, result: "done", attempts: 1 });
    expect(typeof line.durationMs).toBe("number");

    // A message lost and re-sent by the cron still carries the request that caused it.
    const second = await createAd(key, userId);
    await queueJobs(jobContext(onTestShard(withoutMessages()), "trace-lost-1"), placements(userId, [second.adId], 0));
    await env.DB.prepare("UPDATE queue_items SET retry_at = ? WHERE ad_id = ?")
      .bind(new Date(Date.now() - 5 * 60_000).toISOString(), second.adId)
      .run();
    const summary = await runScheduled(onTestShard(), Date.parse("2026-11-22T10:00:00.000Z"));
    expect(summary.runId).toBe("cron-2026-11-22T10:00:00.000Z");
    expect(summary.parts.resend).toMatchObject({ ok: true, resent: 1 });
    expect(lines.find((l) => l.msg === "scheduled work")).toMatchObject({ requestId: "cron-2026-11-22T10:00:00.000Z" });
    await eventually(
      async () => lines.find((l) => l.msg === "job" && l.requestId === "trace-lost-1"),
      "the re-sent job",
    );
  });
});

describe("failure isolation", () => {
  it("a cron part that throws is reported, and the parts after it still run", async () => {
    const lines = captureLogs();
    const failingTasks = new Proxy(env.DB, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name === "prepare")
          return (query: string) => {
            // The due tasks' reads (the id blocks' top-up reads the table's highest id as well: it goes on).
            if (/from "tasks"/i.test(query) && !query.includes("id_blocks")) throw new Error("tasks table unavailable");
            return target.prepare(query);
          };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await env.DB.prepare(
      "INSERT INTO idempotency_keys (client_id, key, fingerprint, expires_at) VALUES (1, 'old-key', 'x', '2000-01-01T00:00:00.000Z')",
    ).run();
    const summary = await runScheduled(onTestShard(env, 1, failingTasks), Date.now());
    expect(summary.failed).toEqual(["tasks"]);
    expect(summary.parts.tasks).toMatchObject({ ok: false, error: "tasks table unavailable" });
    for (const part of [
      "idBlocks",
      "autoreplace",
      "requestedUpdates",
      "resend",
      "expire",
      "marketData",
      "notices",
      "idempotencyKeys",
      "events",
      "tokenKeys",
    ])
      expect(summary.parts[part], part).toMatchObject({ ok: true });
    expect(summary.parts.idempotencyKeys).toMatchObject({ purged: 1 });
    expect(lines.find((l) => l.msg === "scheduled part failed")).toMatchObject({ level: "error", part: "tasks" });
    expect(lines.find((l) => l.msg === "scheduled work")).toMatchObject({ level: "error", failed: ["tasks"] });
  });

  it("the dead-letter consumer knows its queue from configuration and retries its own failed writes", async () => {
    // Every shard's D1 fails: the job's id may be of a block of either shard.
    const broken = (d1: D1Database) =>
      new Proxy(d1, {
        get(target, name, receiver) {
          if (name === "prepare" || name === "batch")
            return () => {
              throw new Error("D1 unavailable");
            };
          const value = Reflect.get(target, name, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    captureLogs();
    const batch = createMessageBatch<JobMessage>(env.DEAD_LETTER_QUEUE, [
      { id: "dead-1", timestamp: new Date(), attempts: 1, body: { kind: "publish", itemId: 1 } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, { ...env, DB: broken(env.DB), DB_2: broken(env.DB_2) } as Env);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual(["dead-1"]);
    expect(result.explicitAcks).toEqual([]);
  });
});

describe("metrics", () => {
  it("are written for a placement that succeeds and one that is refused, with the charge and the refund", async () => {
    const { points, env: metricsEnv } = recordingMetrics();
    const userId = await connectedSeller(key, internalKey, 10_000);
    const good = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Goede brommer" });
    const bad = await createAd(key, userId, { categoryId: PAID_CATEGORY, title: "Slechte [reject] brommer" });
    const queued = await queueJobs(
      jobContext(onTestShard(withoutMessages(metricsEnv))),
      placements(userId, [good.adId, bad.adId], 400),
    );
    for (const q of queued) await runPublishJob(onTestShard(metricsEnv), q?.jobId as number, "trace-metrics");
    const events = points.map((p) => ({ blobs: p.blobs, doubles: p.doubles?.length }));
    expect(events).toEqual([
      { blobs: ["wallet", "charge", "portal_a"], doubles: 1 },
      { blobs: ["wallet", "charge", "portal_a"], doubles: 1 },
      { blobs: ["job", "placement", "portal_a", "done"], doubles: 2 },
      { blobs: ["wallet", "refund", "portal_a"], doubles: 1 },
      { blobs: ["job", "placement", "portal_a", "error"], doubles: 2 },
    ]);
    expect(points[0]).toMatchObject({ indexes: ["wallet"], doubles: [400] });
  });

  it("record every request by route and status, with the D1 rows it read and wrote", async () => {
    const { points, env: metricsEnv } = recordingMetrics();
    const response = await app.fetch(
      new Request(`${BASE}/ads/?itemsPerPage=3`, { headers: { Authorization: `Bearer ${key}` } }),
      metricsEnv,
      createExecutionContext(),
    );
    expect(points).toHaveLength(1);
    expect(points[0]).toMatchObject({ indexes: ["request"], blobs: ["request", "/rest/v1/ads", "GET"] });
    const [status, durationMs, rowsRead, rowsWritten] = points[0]?.doubles ?? [];
    expect(status).toBe(200);
    expect(durationMs).toBeGreaterThanOrEqual(0);
    // The page's count and rows at least; a read writes nothing. The answer says the same.
    expect(rowsRead).toBeGreaterThan(0);
    expect(rowsWritten).toBe(0);
    expect(response.headers.get("Server-Timing")).toBe(`d1;desc="rows_read=${rowsRead} rows_written=0"`);
  });
});

describe("readiness", () => {
  it("/health stays cheap; deep=1 checks every dependency for internal clients", async () => {
    const plain = await call("GET", "/health");
    expectEnvelope(plain, 200);
    expect(plain.body.data).not.toHaveProperty("checks");
    expectError(await call("GET", "/health?deep=1"), "missing_api_key");
    expectError(await call("GET", "/health?deep=1", { key }), "internal_only");
    const deep = await call("GET", "/health?deep=1", { key: internalKey });
    expectEnvelope(deep, 200);
    expect(deep.body.data).toMatchObject({
      status: "ok",
      version: "development",
      migration: `${journal.entries.at(-1)?.tag}.sql`,
      tokensToReseal: 0,
    });
    for (const name of ["d1", "directory", "r2", "queue", "rateLimiter"] as const)
      expect(deep.body.data.checks?.[name], name).toMatchObject({ ok: true, latencyMs: expect.any(Number) });
    // Each shard, migrated to the last migration.
    expect(deep.body.data.shards).toEqual(
      [1, 2].map((shard) => ({
        shard,
        ok: true,
        latencyMs: expect.any(Number),
        migration: `${journal.entries.at(-1)?.tag}.sql`,
        tokensToReseal: expect.any(Number),
        sizeBytes: expect.any(Number),
      })),
    );
    // The share of each table's 32-bit ids its blocks took: the highest block the directory leased + 1, of
    // 2^31 / 4,096.
    const { results: highest } = await env.DIRECTORY.prepare(
      "SELECT kind, max(block) AS block FROM id_blocks GROUP BY kind",
    ).all<{ kind: string; block: number }>();
    expect(highest.length).toBeGreaterThan(0);
    expect(deep.body.data.idSpace).toEqual(
      Object.fromEntries(highest.map(({ kind, block }) => [kind, (block + 1) / (2 ** 31 / ID_BLOCK_SIZE)])),
    );

    const brokenR2 = {
      ...env,
      MEDIA: { head: async () => Promise.reject(new Error("bucket unreachable")) },
    } as unknown as Env;
    const answer = await app.fetch(
      new Request(`${BASE}/health?deep=1`, { headers: { Authorization: `Bearer ${internalKey}` } }),
      brokenR2,
      createExecutionContext(),
    );
    expect(answer.status).toBe(503);
    const body = await answer.json<{
      errors: string[];
      errorDetails: unknown[];
      data: { checks: Record<string, { ok: boolean }> };
    }>();
    expect(body.errors).toEqual(["r2: bucket unreachable"]);
    expect(body.errorDetails).toEqual([
      { code: "service_unavailable", field: "r2", message: "r2: bucket unreachable" },
    ]);
    expect(body.data.checks.r2?.ok).toBe(false);
    expect(body.data.checks.d1?.ok).toBe(true);

    // A shard that does not answer fails the check, named.
    const brokenShard = {
      ...env,
      DB_2: { prepare: () => ({ run: () => Promise.reject(new Error("shard unreachable")) }) },
    } as unknown as Env;
    const withoutShard = await app.fetch(
      new Request(`${BASE}/health?deep=1`, { headers: { Authorization: `Bearer ${internalKey}` } }),
      brokenShard,
      createExecutionContext(),
    );
    expect(withoutShard.status).toBe(503);
    const report = await withoutShard.json<{ errors: string[]; data: { shards: { shard: number; ok: boolean }[] } }>();
    expect(report.errors).toEqual(["d1: shard 2: shard unreachable"]);
    expect(report.data.shards.map((shard) => [shard.shard, shard.ok])).toEqual([
      [1, true],
      [2, false],
    ]);
  });
});

describe("wrangler.toml", () => {
  const config = parse(wranglerToml) as Record<string, any>;
  const production = config.env.production;
  const sandbox = config.env.sandbox;

  it("holds the production invariants", () => {
    expect(config.upload_source_maps).toBe(true);
    expect(production.workers_dev).toBe(false);
    expect(production.routes?.[0]).toMatchObject({ custom_domain: true });
    expect(production.placement).toEqual({ mode: "smart" });
    expect(production.observability).toMatchObject({ enabled: true, traces: { enabled: true } });
    expect(production.observability.traces.head_sampling_rate).toBeGreaterThan(0);
    expect(production.observability.traces.head_sampling_rate).toBeLessThanOrEqual(1);
    expect(production.vars.LOG_REQUESTS).toBe("false");
    expect(production.vars.ENVIRONMENT).toBe("production");
    expect(production.vars.PORTAL_A_API).toMatch(/^https:\/\//);
    expect(production.vars.OUTBOUND_DNS_RESOLVER).toMatch(/^https:\/\//);
    expect(production.analytics_engine_datasets).toEqual([expect.objectContaining({ binding: "METRICS" })]);
    // The marketplace simulator is a Worker of its own, bound where it runs and never in production.
    const services = (env: Record<string, any>) => (env.services ?? []).map((s: { binding: string }) => s.binding);
    expect(services(production)).toEqual([]);
    expect(production.vars.PORTAL_B_API).not.toBe("simulator");
    expect(services(sandbox)).toEqual(["MARKETPLACE"]);
    expect(services(config)).toEqual(["MARKETPLACE"]);
    const simulator = parse(simulatorToml) as Record<string, any>;
    expect(Object.keys(simulator.env)).toEqual(["sandbox"]);
    expect(config.services[0].service).toBe(simulator.name);
    expect(sandbox.services[0].service).toBe(simulator.env.sandbox.name);
  });

  it("gives every environment bounded consumers and a dead-letter chain that drops nothing", () => {
    for (const [name, environment] of [
      ["development", config],
      ["sandbox", sandbox],
      ["production", production],
    ] as const) {
      const [jobs, deadLetters] = environment.queues.consumers;
      expect(jobs, name).toMatchObject({ max_batch_size: expect.any(Number), max_concurrency: expect.any(Number) });
      expect(jobs.dead_letter_queue, name).toBe(deadLetters.queue);
      expect(environment.vars.DEAD_LETTER_QUEUE, name).toBe(deadLetters.queue);
      expect(deadLetters.dead_letter_queue, name).toMatch(/^jobs-last-resort/);
      expect(deadLetters.max_concurrency, name).toBeGreaterThan(0);
    }
  });
});
