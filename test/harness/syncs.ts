import { env } from "cloudflare:test";
import type { Env, ShardEnv } from "../../src/env";
import { jobContext } from "../../src/services/shared";
import { runSyncStep } from "../../src/services/syncs";
import { call, eventually } from "./api";
import { onTestShard } from "./d1";
import { PAID_CATEGORY, requiredAttributes } from "./data";

/** An item of a dealer's stock: a paid ad for portal_a, with `overrides`. */
export const stockItem = (externalAdId: number, overrides: Record<string, unknown> = {}) => ({
  externalAdId,
  categoryId: PAID_CATEGORY,
  title: `Brommer ${externalAdId}`,
  description: "Een nette brommer, weinig gereden.",
  price: { model: "fixed", price: 100_000 },
  attributes: requiredAttributes(PAID_CATEGORY),
  targets: ["portal_a"],
  ...overrides,
});

/** Bindings whose job queue drops the jobs of `dropped` kinds (a lost message, or steps a test runs itself). */
export const dropping = (dropped: string[], base: Env = env as unknown as Env): Env => ({
  ...base,
  JOBS: {
    send: async (body: { kind: string }, options?: QueueSendOptions) =>
      dropped.includes(body.kind) ? undefined : base.JOBS.send(body as never, options),
    sendBatch: async (messages: Iterable<MessageSendRequest<{ kind: string }>>, options?: QueueSendBatchOptions) => {
      const jobs = [...messages].filter((message) => !dropped.includes(message.body.kind));
      if (jobs.length > 0) await base.JOBS.sendBatch(jobs as never, options);
    },
  } as unknown as Env["JOBS"],
});

/** Bindings whose job queue carries every job but a sync's steps: the test runs those itself. */
export const stepsHeld = (base?: Env) => dropping(["sync"], base);

/**
 * `stepsHeld` bindings whose stock store dies (throws) when a step writes an object of `part` (`report`,
 * `ended`) a second time: the step did its work, and died before it stored what it did.
 */
export const dyingOnRewrite = (part: string) =>
  onTestShard({
    ...stepsHeld(),
    STOCKS: new Proxy(env.STOCKS, {
      get: (bucket, name) =>
        name === "put"
          ? async (objectKey: string, value: string) => {
              if (objectKey.includes(`/${part}/`) && (await bucket.head(objectKey)))
                throw new Error("the process died");
              return bucket.put(objectKey, value);
            }
          : Reflect.get(bucket, name).bind(bucket),
    }),
  });

/**
 * A client's stock syncs as a dealer's system sends and follows them (NDJSON, then polling), with the key
 * `keyOf` answers when they are called (a file's client is made in its beforeAll).
 */
export function stockSyncs(keyOf: () => string) {
  const ndjson = (items: unknown[]) => items.map((i) => JSON.stringify(i)).join("\n");

  /** Sends a user's stock to `/syncs/` (or `path`, e.g. the preview), with other bindings when given. */
  const sendStock = (userId: number, items: unknown[], options: { path?: string; query?: string; env?: Env } = {}) =>
    call("POST", `${options.path ?? "/syncs/"}?userId=${userId}${options.query ?? ""}`, {
      key: keyOf(),
      rawBody: ndjson(items),
      headers: { "Content-Type": "application/x-ndjson" },
      ...(options.env ? { env: options.env } : {}),
    });

  const syncOf = async (syncId: number) => (await call("GET", `/syncs/${syncId}`, { key: keyOf() })).body.data;

  /** The sync once it ended (finished, refused or failed). */
  const settledSync = (syncId: number) =>
    eventually(async () => {
      const sync = await syncOf(syncId);
      return sync.state === "running" || sync.state === "receiving" ? undefined : sync;
    }, `sync ${syncId} to end`);

  /**
   * Runs a sync's steps with `bindings` until it ends, as its client's lanes would (again after a step
   * that waits); answers how many ran.
   */
  async function runSteps(syncId: number, bindings: ShardEnv = onTestShard(stepsHeld())) {
    let steps = 0;
    await eventually(async () => {
      await runSyncStep(jobContext(bindings), { syncId });
      steps += 1;
      return (await syncOf(syncId)).state === "running" ? undefined : true;
    }, `sync ${syncId}'s steps`);
    return steps;
  }

  const totalOf = async (path: string) => (await call("GET", path, { key: keyOf() })).body.totalItems as number;

  /** Every publish job of the user has ended. */
  const jobsSettled = (userId: number) =>
    eventually(
      async () =>
        (await totalOf(`/jobs/?userId=${userId}&state=pending&itemsPerPage=1`)) +
          (await totalOf(`/jobs/?userId=${userId}&state=processing&itemsPerPage=1`)) ===
        0
          ? true
          : undefined,
      `user ${userId}'s jobs to end`,
    );

  return { sendStock, syncOf, settledSync, runSteps, totalOf, jobsSettled };
}
