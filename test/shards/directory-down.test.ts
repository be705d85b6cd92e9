import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ID_BLOCK_SIZE, ID_BLOCK_SLACK } from "../../src/db/ids";
import { shardDatabase } from "../../src/db/shards";
import type { Env } from "../../src/env";
import { handingJobsToLanes } from "../../src/jobs/handOver";
import { call, expectEnvelope, expectError, newClient } from "../harness/api";
import { adBody, createAd, createUser, userBody } from "../harness/data";
import { cronAt } from "../harness/tasks";

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

  it("a group past half its block gets the next one in the shard's minute, so its inserts outlast an outage", async () => {
    const shard = 2;
    const db = shardDatabase(env, shard);
    /** A partner's first ad, and its group's block of ads used up to `used` ids (as if they had been issued). */
    const usedUpTo = async (used: number) => {
      const partner = await newClient({ partner: true, shard });
      const userId = (await createUser(partner.key)).userId as number;
      const block = Math.floor(((await createAd(partner.key, userId)).adId as number) / ID_BLOCK_SIZE);
      await db
        .prepare("UPDATE id_blocks SET deleted_high = ? WHERE kind = 'ads' AND block = ?")
        .bind(block * ID_BLOCK_SIZE + used, block)
        .run();
      return { key: partner.key, userId, block };
    };
    const down = directoryDown();
    const insert = (key: string, userId: number) => call("POST", "/ads/", { key, env: down, body: adBody(userId) });

    // More than half used, less than full: the shard's minute leases the next block while the directory answers.
    const ahead = await usedUpTo(ID_BLOCK_SIZE / 2 + 100);
    await cronAt(new Date().toISOString());
    // A block used up after that minute, with the directory gone before the next: the insert that needs a
    // new block is refused, and writes nothing.
    const behind = await usedUpTo(ID_BLOCK_SIZE - ID_BLOCK_SLACK);

    const answer = await insert(ahead.key, ahead.userId);
    expectEnvelope(answer, 200);
    expect(Math.floor((answer.body.data as { adId: number }).adId / ID_BLOCK_SIZE)).toBeGreaterThan(ahead.block);

    expectError(await insert(behind.key, behind.userId), "service_unavailable");
    const count = await db.prepare("SELECT count(*) AS n FROM ads WHERE user_id = ?").bind(behind.userId).first();
    expect(count).toEqual({ n: 1 });
  });

  it("a change of the client's settings is refused 503, and takes once the directory answers", async () => {
    const partner = await newClient({ partner: true, shard: 2 });
    const origins = { returnOrigins: ["https://erp.example.nl"] };
    expectError(
      await call("PATCH", "/client/", { key: partner.key, env: directoryDown(), body: origins }),
      "service_unavailable",
    );
    expectEnvelope(await call("PATCH", "/client/", { key: partner.key, body: origins }), 200);
    const read = await call("GET", "/client/", { key: partner.key });
    expect(read.body.data).toMatchObject(origins);
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
