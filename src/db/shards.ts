/**
 * Shards: the data of the platform spreads over many D1 databases by client group. Shard 1 is the `DB`
 * binding (the database from before shards, so nothing had to be copied to start), shard n is `DB_n`.
 * The `DIRECTORY` binding says which shard each group lives on, and holds the clients with their keys
 * and every block of ids leased (src/db/ids.ts); each shard keeps a copy of its own groups, clients and
 * blocks, which its queries and foreign keys use.
 *
 * The shard is named, never assumed: the code's `Env` has no shard's database (src/env.ts). Work runs on
 * one shard with `onShard(env, n, why)`: the bindings with that shard named (`shard`: its number, why the
 * work runs there, its database leasing id blocks from the directory) and the job queues stamping
 * `shard: n` on every message they send, so that the consumer runs each job on the shard its rows are on.
 */
import type { Env, ShardEnv, ShardReason } from "../env";
import { log } from "../lib/log";
import { ID_BLOCK_SIZE, leasingIdBlocks } from "./ids";

type ShardedEnv = Env;

export type { NamedShard, ShardReason } from "../env";

const SHARD_BINDING = /^DB(?:_(\d+))?$/;

/** The shards the Worker has a binding for, in order (1 is `DB`). */
export function shardNumbers(env: ShardedEnv): number[] {
  const numbers = new Set<number>();
  for (const name of Object.keys(env)) {
    const match = SHARD_BINDING.exec(name);
    if (match) numbers.add(match[1] === undefined ? 1 : Number(match[1]));
  }
  return [...numbers].sort((a, b) => a - b);
}

/** The D1 binding of shard `shard`: the one place that reads a shard's binding. */
export function shardDatabase(env: ShardedEnv, shard: number): D1Database {
  const bindings = env as unknown as Record<string, D1Database | undefined>;
  const binding = bindings[shard === 1 ? "DB" : `DB_${shard}`];
  if (!binding) throw new Error(`no binding for shard ${shard}: add DB_${shard} to wrangler.toml`);
  return binding;
}

/** The job queues, whose messages say which shard their rows are on. */
export const JOB_QUEUES = ["JOBS", "WEBHOOKS", "WEBHOOKS_SLOW", "IMAGE_JOBS"] as const;

/** A queue that stamps `shard` on the body of every message it sends. */
function stampingShard(queue: Queue, shard: number): Queue {
  const stamp = (body: unknown) => ({ ...(body as object), shard });
  return {
    send: (body, options) => queue.send(stamp(body), options),
    sendBatch: (messages, options) =>
      queue.sendBatch(
        [...messages].map((message) => ({ ...message, body: stamp(message.body) })),
        options,
      ),
  } as Queue;
}

/**
 * The bindings of work on shard `shard`, named with why it runs there (`database`: a session of it), and
 * queues that name it.
 */
export function onShard(
  env: ShardedEnv,
  shard: number,
  why: ShardReason,
  database = shardDatabase(env, shard),
): ShardEnv {
  const queues = Object.fromEntries(JOB_QUEUES.map((name) => [name, stampingShard(env[name], shard)]));
  return {
    ...env,
    ...queues,
    shard: { number: shard, why, d1: leasingIdBlocks({ number: shard, d1: database, directory: env.DIRECTORY }) },
  };
}

/** The shard a message's rows are on (a message from before shards names none: shard 1). */
export const shardOf = (message: { shard?: number }) => message.shard ?? 1;

/**
 * Runs `work` once per shard on that shard's messages, side by side, and answers each message's result
 * in the messages' order. A shard whose work fails fails only its own messages (rejected with its error):
 * a shard that does not answer holds up no other shard's jobs.
 */
export async function onEachShard<M extends { shard?: number }, R>(
  messages: M[],
  work: (shard: number, messages: M[]) => Promise<R[]>,
): Promise<PromiseSettledResult<R>[]> {
  const positions = new Map<number, number[]>();
  messages.forEach((message, at) => {
    const shard = shardOf(message);
    positions.set(shard, [...(positions.get(shard) ?? []), at]);
  });
  const results: PromiseSettledResult<R>[] = [];
  await Promise.all(
    [...positions].map(async ([shard, at]) => {
      try {
        const answered = await work(
          shard,
          at.map((index) => messages[index] as M),
        );
        at.forEach((index, i) => {
          results[index] = { status: "fulfilled", value: answered[i] as R };
        });
      } catch (reason) {
        for (const index of at) results[index] = { status: "rejected", reason };
      }
    }),
  );
  return results;
}

/**
 * The shard a new group is placed on: the one given, or the emptiest by its database's size (D1 reports
 * it with every answer), ties to the lowest number.
 */
export async function shardForNewGroup(env: ShardedEnv, wanted?: number): Promise<number> {
  const shards = shardNumbers(env);
  if (wanted !== undefined) {
    if (!shards.includes(wanted)) throw new Error(`no shard ${wanted}: the shards are ${shards.join(", ")}`);
    return wanted;
  }
  const sizes = await Promise.all(
    shards.map(async (shard) => (await shardDatabase(env, shard).prepare("SELECT 1").run()).meta.size_after ?? 0),
  );
  return shards[sizes.indexOf(Math.min(...sizes))] ?? 1;
}

/** An id a request names, with the table it was issued for. */
export interface NamedId {
  field: string;
  kind: string;
  id: number;
}

/** Where a group's rows are: its shard, and while it moves, the shard it moves to (src/db/moves/). */
export interface GroupPlace {
  group: number;
  shard: number;
  movingTo: number | null;
}

/** The place of each block (`ads 3`) and client (`client 7`), as this isolate last read it from the directory. */
const knownShards = new Map<string, { place: GroupPlace | undefined; until: number }>();
const SHARD_CACHE_MS = 10_000;
const MOVING_SHARD_CACHE_MS = 1_000;
const SHARD_CACHE_SIZE = 50_000;

/**
 * The shard of each key, from this isolate's memory of the last 10 seconds, or else `lookup` (one
 * directory query for every key it does not know); a key the directory does not know has none.
 */
async function cachedShards(keys: string[], lookup: (unknown: string[]) => Promise<Map<string, GroupPlace>>) {
  const now = Date.now();
  const unknown = [...new Set(keys)].filter((key) => (knownShards.get(key)?.until ?? 0) <= now);
  if (unknown.length > 0) {
    const found = await lookup(unknown);
    for (const key of unknown) {
      const place = found.get(key);
      knownShards.delete(key);
      // A moving group's shard changes soon (src/db/moves/): it is asked again within a second.
      knownShards.set(key, {
        place,
        until: now + (place?.movingTo ? MOVING_SHARD_CACHE_MS : SHARD_CACHE_MS),
      });
    }
    while (knownShards.size > SHARD_CACHE_SIZE) knownShards.delete(knownShards.keys().next().value as string);
  }
  return keys.map((key) => knownShards.get(key)?.place);
}

/**
 * Forgets what this isolate read of group `group`'s place: a move's runner, which knows the group's place
 * changed, routes it by the directory at once (other isolates, within their seconds of cache).
 */
export function forgetGroupPlaces(group: number): void {
  for (const [key, known] of knownShards) if (known.place?.group === group) knownShards.delete(key);
}

/**
 * The rows of a query of the directory's clients, groups and id blocks, each with the shard of its group
 * (`shard`). When the directory does not answer, the same query runs on every shard's copy of them: a
 * shard holds its own groups' clients, groups and blocks, written with the directory's on every change
 * (a client created or revoked, a block leased, a group moved), so each row is taken from the shard its
 * group is on. Keys and ids so still resolve while the directory is down; a change the directory took
 * and a shard's copy did not yet is seen once the directory answers again.
 */
export async function readDirectory<Row extends { shard: number }>(
  env: ShardedEnv,
  query: string,
  ...values: unknown[]
): Promise<Row[]> {
  const read = async (database: D1Database) =>
    (
      await database
        .prepare(query)
        .bind(...values)
        .all<Row>()
    ).results;
  try {
    return await read(env.DIRECTORY);
  } catch (directoryFailed) {
    const copies = await Promise.allSettled(
      shardNumbers(env).map(async (shard) =>
        (await read(shardDatabase(env, shard))).filter((row) => row.shard === shard),
      ),
    );
    if (copies.every((copy) => copy.status === "rejected")) throw directoryFailed;
    log("warn", "the directory did not answer; read from the shards' copies", {
      error: directoryFailed instanceof Error ? directoryFailed.message : String(directoryFailed),
    });
    return copies.flatMap((copy) => (copy.status === "fulfilled" ? copy.value : []));
  }
}

/**
 * Where each named id's group is, by the id's block (src/db/ids.ts), or, for a client's id, by its group:
 * one directory query for what this isolate has not seen lately, none otherwise. An id of no leased block
 * (or no client) has no place (undefined).
 */
export async function shardsOfIds(env: ShardedEnv, named: NamedId[]): Promise<(GroupPlace | undefined)[]> {
  const keyOf = ({ kind, id }: NamedId) =>
    kind === CLIENTS ? `client ${id}` : `${kind} ${Math.floor(id / ID_BLOCK_SIZE)}`;
  return cachedShards(named.map(keyOf), async (unknown) => {
    // Literals: every kind is a table name and every number an integer, and a request names more blocks
    // than D1 binds parameters to one statement.
    const parts = unknown.map((key) => {
      const [kind = "", value = ""] = key.split(" ");
      return { kind: kind.replace(/[^a-z_]/g, ""), value: Number.parseInt(value, 10) };
    });
    const blocks = parts.filter((part) => part.kind !== "client");
    const clients = parts.filter((part) => part.kind === "client");
    const results = await readDirectory<{ key: string; group: number; shard: number; movingTo: number | null }>(
      env,
      `SELECT b.kind || ' ' || b.block AS key, g.id AS "group", g.shard AS shard, g.moving_to AS movingTo FROM id_blocks b
       JOIN client_groups g ON g.id = b.group_id
       WHERE (b.kind, b.block) IN (VALUES ${blocks.map((b) => `('${b.kind}', ${b.value})`).join(", ") || "(NULL, NULL)"})
       UNION ALL
       SELECT 'client ' || c.id AS key, g.id AS "group", g.shard AS shard, g.moving_to AS movingTo FROM api_clients c
       JOIN client_groups g ON g.id = c.group_id
       WHERE c.id IN (${clients.map((c) => c.value).join(", ") || "NULL"})`,
    );
    return new Map(results.map(({ key, ...place }) => [key, place]));
  });
}

/** The kind of a named client id (`shardsOfIds`): a client is found by its group, not by a block. */
export const CLIENTS = "api_clients";

/**
 * The shard of the row a keyless call names (the user a consent's state leads with), by the id's block:
 * undefined when no group holds it. A keyless route has no client to route by, so it routes by this.
 */
export async function shardOfNamedId(env: ShardedEnv, named: NamedId): Promise<number | undefined> {
  const [place] = await shardsOfIds(env, [named]);
  return place?.shard;
}
