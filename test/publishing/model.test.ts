import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { twoClients } from "../harness/api";
import { commandsArbitrary, modelRun } from "./marketplaceModel";

/**
 * Model-based test of publishing and its money (see marketplaceModel.ts): random interleavings of
 * publish, repeat publish, unpublish, feature, retry, consumer steps, redelivery, dead letters, lost
 * messages and a consumer killed mid-batch, checked after every run against the marketplace simulator.
 * `npm run test:model` runs it longer (MODEL_RUNS, MODEL_SEED; MODEL_WITHOUT leaves commands out).
 */

let key: string;
let internalKey: string;

beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

const runs = Number(env.MODEL_RUNS || 0) || 25;
const seed = env.MODEL_SEED ? Number(env.MODEL_SEED) : undefined;
const without = env.MODEL_WITHOUT ? env.MODEL_WITHOUT.split(",") : [];

describe("publishing and money, model-based", () => {
  it(`holds its invariants over ${runs} random runs`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), commandsArbitrary(25, without), (scheduler, commands) =>
        modelRun(key, internalKey, scheduler, commands),
      ),
      { numRuns: runs, seed },
    );
  }, 600_000);
});
