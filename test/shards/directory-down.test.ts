import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { handingJobsToLanes } from "../../src/jobs/handOver";
import { call, expectEnvelope, expectError, newClient } from "../harness/api";
import { adBody, createAd, userBody } from "../harness/data";

/**
 * The directory off the hot path: while it does not answer, keys and ids resolve from the shards' copies
 * of it (src/db/shards.ts `readDirectory`), so authentication, reads by id and inserts go on, on every
 * shard, and a revoked key stays refused.
 */

/** The pool's bindings with a directory that answers nothing, as the Worker runs the API. */
const directoryDown = (): Env => {
  const unreachable = () => {
    throw new Error("D1_ERROR: the directory is unreachable");
  };
  const directory = { prepare: unreachable, batch: unreachable, exec: unreachable, withSession: unreachable };
  return handingJobsToLanes({ ...env, DIRECTORY: directory as unknown as D1Database });
};

describe("the directory does not answer", () => {
  it("keys authenticate and inserts go on, on every shard; a revoked or unknown key is refused", async () => {
    const down = directoryDown();
    for (const shard of [1, 2]) {
      // Keys this isolate never looked up: no cached answer stands in for the directory.
      const partner = await newClient({ partner: true, shard });
      const client = await call("GET", "/client/", { key: partner.key, env: down });
      expectEnvelope(client, 200);
      expect(client.body.data).toMatchObject({ clientId: partner.client.id, partner: true, internal: false });

      const user = await call("POST", "/users/", { key: partner.key, env: down, body: userBody() });
      expectEnvelope(user, 200);
      const { userId } = user.body.data as { userId: number };
      const ad = await call("POST", "/ads/", { key: partner.key, env: down, body: adBody(userId) });
      expectEnvelope(ad, 200);

      // An internal client's read of another client's user finds its shard by the id's block.
      const internal = await newClient({ internal: true, shard: shard === 1 ? 2 : 1 });
      const read = await call("GET", `/users/${userId}`, { key: internal.key, env: down });
      expectEnvelope(read, 200);
      expect(read.body.data).toEqual([expect.objectContaining({ userId })]);
    }

    // A key revoked (in the directory and its shard's copy, as npm run client -- revoke does) stays refused.
    const revoked = await newClient({ shard: 2 });
    for (const database of [env.DIRECTORY, env.DB_2])
      await database.prepare("UPDATE api_clients SET revoked = 1 WHERE id = ?").bind(revoked.client.id).run();
    expectError(await call("GET", "/client/", { key: revoked.key, env: down }), "invalid_api_key");
    expectError(await call("GET", "/client/", { key: "cam_not-a-key-of-anyone", env: down }), "invalid_api_key");
  });

  it("a key's ads keep their shard once the directory answers again", async () => {
    const partner = await newClient({ partner: true, shard: 2 });
    const user = await call("POST", "/users/", { key: partner.key, env: directoryDown(), body: userBody() });
    const { userId } = user.body.data as { userId: number };
    const { adId } = await createAd(partner.key, userId);
    const row = await env.DB_2.prepare("SELECT user_id AS userId FROM ads WHERE id = ?").bind(adId).first();
    expect(row).toEqual({ userId });
  });
});
