import { env } from "cloudflare:test";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import type { MoveState } from "../../src/db/moves";
import { shardDatabase } from "../../src/db/shards";
import { CLIENT_CACHE_MS } from "../../src/services/accounts/apiClients";
import { noteBudgetCrossing } from "../../src/services/wallet/wallet";
import { type Answer, call, expectError, groupOf, newClient } from "./api";
import { onTestShard } from "./d1";
import { connectedSeller } from "./marketplace";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A partner and an internal client of one new group on shard 1, with a connected, paid-up seller. */
export async function groupOnShard1() {
  const partner = await newClient({ partner: true, shard: 1 });
  const group = await groupOf(partner.client.id);
  const internal = await newClient({ internal: true, groupId: group });
  const sellerId = await connectedSeller(partner.key, internal.key, 100_000);
  return { group, key: partner.key, internalKey: internal.key, clientId: partner.client.id, sellerId };
}

/** Calls as a client does while its group switches shards: a write refused with 503 `group_moving` waits and goes again. */
export function movingClient(key: string) {
  const refused: number[] = [];
  return {
    refused,
    async call(method: "POST" | "PUT", path: string, body: unknown): Promise<Answer> {
      const first = Date.now();
      let waited = false;
      for (;;) {
        const answer = await call(method, path as "/ads/", { key, body });
        if (answer.status !== 503) {
          if (waited) refused.push(Date.now() - first);
          return answer;
        }
        waited = true;
        expectError(answer, "group_moving");
        expect(answer.headers.get("Retry-After")).toBe("2");
        // A switch that never ended would hold the client here until the test's own time runs out.
        await sleep(100);
      }
    },
  };
}

/**
 * POST /clientgroups/<group>/move, as an internal client, again while it answers `moving` (each call runs
 * the move on): the move's figures once moved.
 */
export async function moved(internalKey: string, group: number, shard: number): Promise<MoveState> {
  for (;;) {
    const answer = await call("POST", `/clientgroups/${group}/move`, { key: internalKey, body: { shard } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const state = answer.body.data as MoveState;
    if (state.state === "moved") return state;
  }
}

/** POST /clientgroups/<group>/move/confirm. */
export async function confirmed(internalKey: string, group: number) {
  const answer = await call("POST", `/clientgroups/${group}/move/confirm`, { key: internalKey });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.data as { groupId: number; deleted: Record<number, number> };
}

/** A member of a binding, a method bound to it (its private state is not the proxy's). */
const bound = (target: D1Database, name: string | symbol) => {
  const value = Reflect.get(target, name);
  return typeof value === "function" ? value.bind(target) : value;
};

/** A database whose statements fail from the one whose SQL `fails` matches: a runner that dies there. */
export function failingAt(d1: D1Database, fails: RegExp): D1Database {
  return new Proxy(d1, {
    get: (target, name) =>
      name === "prepare"
        ? (query: string) => {
            if (fails.test(query)) throw new Error("the runner died here");
            return target.prepare(query);
          }
        : bound(target, name),
  });
}

/**
 * A budget notice of a user of shard `shard`, written as a charge crossing its limit writes one, with its
 * event (`wallet.below_limit`, whose `limit` tells it apart).
 */
export async function budgetNotice(userId: number, shard = 1, limit = 1_000_000_000) {
  await shardDatabase(env, shard)
    .prepare("UPDATE user_settings SET budget_notify_limit = ? WHERE user_id = ?")
    .bind(limit, userId)
    .run();
  await noteBudgetCrossing(getDb(onTestShard(env, shard).shard.d1), userId, limit);
}

/** Lets the last move of `group` be confirmed at once (as if its switch were the isolates' cache ago). */
export const switchedLongAgo = (group: number) =>
  env.DIRECTORY.prepare(
    "UPDATE client_groups SET move_progress = json_set(move_progress, '$.switchedAt', ?2) WHERE id = ?1",
  )
    .bind(group, Date.now() - CLIENT_CACHE_MS)
    .run();
