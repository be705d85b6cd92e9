// An internal client's ids route to their shard at any width the API issues (src/lib/fields.ts
// `idOfText`): a user of another shard whose id has 11 to 16 digits is found by every route that names
// it in its path or query, as one of 10 digits is.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ID_BLOCK_SIZE } from "../../src/db/ids";
import { call, expectEnvelope, groupOf, newClient } from "../harness/api";
import { createUser } from "../harness/data";
import { leapToBlock } from "../harness/ids";

/** A user of the partner's group whose id lies in `farBlock` or past it: the directory leases it that far. */
async function userInBlock(key: string, group: number, farBlock: number): Promise<number> {
  const latestId = (await createUser(key)).userId as number;
  await leapToBlock({ kind: "users", group, shard: env.DB_2, latestId, farBlock });
  const userId = (await createUser(key)).userId as number;
  expect(userId).toBeGreaterThanOrEqual(farBlock * ID_BLOCK_SIZE);
  return userId;
}

describe("an internal client naming a wide id of another shard's user", () => {
  it("reaches the user's shard on every route that names it in its path or query", async () => {
    const partner = await newClient({ partner: true, shard: 2 });
    const group = await groupOf(partner.client.id);
    const internal = await newClient({ internal: true });
    // 11 digits (a block past 2^24) and 16 (past 2^40, within 2^53 − 1).
    for (const farBlock of [2 ** 24, 2 ** 40]) {
      const userId = await userInBlock(partner.key, group, farBlock);
      expect(String(userId).length).toBe(farBlock === 2 ** 24 ? 11 : 16);
      for (const path of [
        `/users/${userId}`,
        `/wallet/${userId}`,
        `/jobs/?userId=${userId}`,
        `/syncs/?userId=${userId}`,
        `/archive/ledger?userId=${userId}&month=2026-11`,
      ]) {
        const answer = await call("GET", path as "/users/", { key: internal.key });
        expect(answer.status, `GET ${path}: ${JSON.stringify(answer.body)}`).toBe(200);
      }
      const [user] = expectEnvelope(await call("GET", `/users/${userId}` as "/users/", { key: internal.key }), 200)
        .data as { userId: number }[];
      expect(user?.userId).toBe(userId);
    }
  });
});
