import { env } from "cloudflare:test";
import { meterSession } from "../../src/db/meter";
import { onShard } from "../../src/db/shards";
import type { Env, ShardEnv } from "../../src/env";
/**
 * A D1 binding whose every round trip to the database (each `batch`, and each statement run on its own:
 * `all`, `run`, `first`, `raw`) first awaits `before`: a test counts them, holds them still, or hands
 * their order to fast-check's scheduler. Sessions (D1 Sessions, which each request opens) are
 * intercepted like the binding.
 */
export function interceptD1(
  target: D1Database,
  before: (kind: "batch" | "statement", sql: string[]) => Promise<void> | void,
) {
  // The runtime's batch takes its own statement objects, not proxies of them; each proxy knows its SQL.
  const unwrapped = new WeakMap<object, D1PreparedStatement>();
  const sqlOf = new WeakMap<object, string>();
  const statement = (prepared: D1PreparedStatement, query: string): D1PreparedStatement => {
    const proxy = new Proxy(prepared, {
      get(s, property) {
        const member = Reflect.get(s, property);
        if (typeof member !== "function") return member;
        if (["all", "run", "first", "raw"].includes(String(property)))
          return async (...args: unknown[]) => {
            await before("statement", [query]);
            return member.apply(s, args);
          };
        // bind() answers a new statement: it is intercepted too.
        return (...args: unknown[]) => {
          const result = member.apply(s, args);
          return result instanceof Object && "bind" in result
            ? statement(result as D1PreparedStatement, query)
            : result;
        };
      },
    });
    unwrapped.set(proxy, prepared);
    sqlOf.set(proxy, query);
    return proxy;
  };
  const database = <T extends D1Database | D1DatabaseSession>(d1: T): T =>
    new Proxy(d1, {
      get(d1Target, property) {
        const value = Reflect.get(d1Target, property);
        if (property === "batch")
          return async (statements: D1PreparedStatement[]) => {
            await before(
              "batch",
              statements.map((s) => sqlOf.get(s) ?? ""),
            );
            return d1Target.batch(statements.map((s) => unwrapped.get(s) ?? s));
          };
        if (property === "prepare") return (query: string) => statement(d1Target.prepare(query), query);
        if (property === "withSession")
          return (constraint?: string) => database((d1Target as D1Database).withSession(constraint));
        return typeof value === "function" ? value.bind(d1Target) : value;
      },
    });
  return database(target);
}

/** A D1 binding that counts round trips to the database. Services given `getDb(counter.d1)` are measured. */
export function countingD1(target: D1Database) {
  const counter = {
    roundTrips: 0,
    reset: () => (counter.roundTrips = 0),
    d1: interceptD1(target, () => {
      counter.roundTrips += 1;
    }),
  };
  return counter;
}

/**
 * The Worker's bindings with a metered D1 session in place of the database: what the work run with them
 * read and wrote, summed over its statements (as a request's Server-Timing reports it).
 */
export function meteredBindings(base: Env = env) {
  const session = env.DB.withSession("first-primary");
  const usage = meterSession(session);
  return { env: onTestShard(base, 1, session as unknown as D1Database), usage };
}

/**
 * Work on shard `shard` as the code reaches it (`onShard`): the shard of the test clients, 1 unless a test
 * places them (`database`: in place of its binding, e.g. a metered session).
 */
export const onTestShard = (base: Env = env, shard = 1, database?: D1Database): ShardEnv =>
  onShard(base, shard, "the caller's client", database);
