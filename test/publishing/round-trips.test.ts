import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import type { Env } from "../../src/env";
import { requestPublishing, runPublishItem } from "../../src/services/publishing";
import {
  call,
  connectedSeller,
  countingD1,
  createAd,
  defined,
  eventually,
  newClient,
  withoutMessages,
} from "../harness";

let key: string;
let internalKey: string;
let clientId: number;

beforeAll(async () => {
  const client = await newClient({ partner: true });
  key = client.key;
  clientId = client.client.id;
  internalKey = (await newClient({ internal: true })).key;
});

describe("D1 round trips of publishing", () => {
  it("queues and charges a batch of 100 ads in at most 5, and runs a placement in at most 3", async () => {
    const userId = await connectedSeller(key, internalKey, 1_000_000);
    const adIds: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      adIds.push((await createAd(key, userId, { categoryId: 9204, title: `Brommer ${i}`, externalAdId: i })).adId);
    }
    const counter = countingD1(env.DB);
    const counted = { ...withoutMessages(env), DB: counter.d1 } as Env;
    const ctx = {
      db: getDb(counter.d1),
      env: counted,
      caller: { clientId, internal: false, partner: true },
      mediaBase: "/media/",
    };
    const outcomes = await requestPublishing(ctx, {
      userId,
      adIds,
      portal: "portal_a",
      images: true,
      mode: "publish",
    });
    expect(outcomes.every((o) => o.result)).toBe(true);
    // The checks' reads in one batch, the chunk's writes in one, the payer's budget notice check.
    expect(counter.roundTrips).toBeGreaterThanOrEqual(2);
    expect(counter.roundTrips).toBeLessThanOrEqual(5);
    const wallet = await call("GET", `/wallet/${userId}`, { key });
    expect(wallet.body.data.entries.filter((e: { kind: string }) => e.kind === "charge")).toHaveLength(100);

    // One placement: read the item, claim it with every read the job needs, write the outcome.
    counter.reset();
    const itemId = defined(outcomes[0]?.queueItemId);
    await runPublishItem(counted, itemId);
    expect(counter.roundTrips).toBeGreaterThanOrEqual(2);
    expect(counter.roundTrips).toBeLessThanOrEqual(3);
    const job = await eventually(async () => {
      const answer = await call("GET", `/jobs/${itemId}`, { key });
      return answer.body.data.state === "done" ? answer.body.data : undefined;
    }, "the placement");
    expect(job).toMatchObject({ state: "done" });
  });
});
