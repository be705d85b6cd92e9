import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { defined, twoClients } from "../harness/api";
import { commandsArbitrary, modelRun } from "./marketplaceModel";

/**
 * Model-based test of publishing and its money (see marketplaceModel.ts): random interleavings of
 * publish, repeat publish, unpublish, feature, retry, consumer steps, redelivery, dead letters, lost
 * messages and a consumer killed mid-batch, checked after every run against the marketplace simulator.
 * Runs are on either shard, with sellers of the other shard's runs beside them.
 * `npm run test:model` runs it longer (MODEL_RUNS, MODEL_SEED; MODEL_WITHOUT leaves commands out).
 */

/** A platform's partner and internal client on each shard: each run's seller and payer live on one. */
const platforms: { key: string; internalKey: string; shard: number }[] = [];

beforeAll(async () => {
  for (const shard of [1, 2]) platforms.push({ ...(await twoClients(shard)), shard });
});

const runs = Number(env.MODEL_RUNS || 0) || 25;
const seed = env.MODEL_SEED ? Number(env.MODEL_SEED) : undefined;
const without = env.MODEL_WITHOUT ? env.MODEL_WITHOUT.split(",") : [];

describe("publishing and money, model-based", () => {
  it(`holds its invariants over ${runs} random runs`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 1 }),
        fc.scheduler(),
        commandsArbitrary(25, without),
        (platform, scheduler, commands) => modelRun(defined(platforms[platform]), scheduler, commands),
      ),
      { numRuns: runs, seed },
    );
  }, 600_000);
});
