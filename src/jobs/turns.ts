/**
 * A turn of the event loop shared by every D1 call of an isolate's lanes work, at most every
 * TURN_EVERY_MS. workerd looks at its timers and sockets only when no event is ready, and a job's D1
 * answers keep events ready while it is mid-chain: locally, where D1 runs in the same process, many
 * clients' jobs held every timer and socket of the process between them (an image host's bytes, a test's
 * 100 ms wait that took 11 s). Every call that finds the turn due waits on the same timer, so the isolate's
 * chains pause together and the process's timers and sockets get in.
 */

/** How long the isolate's lanes work runs between turns of the event loop. */
const TURN_EVERY_MS = 25;

let turnedAt = 0;
let turning: Promise<void> | undefined;

/** The shared turn when it is due (every caller then waits for the same one), or nothing. */
function turnOfTheLoop(): Promise<void> | undefined {
  if (turning) return turning;
  if (Date.now() - turnedAt < TURN_EVERY_MS) return undefined;
  turning = scheduler.wait(0).then(() => {
    turnedAt = Date.now();
    turning = undefined;
  });
  return turning;
}

const afterTurn = <T>(work: () => Promise<T>): Promise<T> => {
  const turn = turnOfTheLoop();
  return turn ? turn.then(work) : work();
};

const real = Symbol("statement");
type Taking = D1PreparedStatement & { [real]: D1PreparedStatement };

function taking(statement: D1PreparedStatement): Taking {
  return {
    [real]: statement,
    bind: (...values: unknown[]) => taking(statement.bind(...values)),
    first: (column?: string) => afterTurn(() => (column === undefined ? statement.first() : statement.first(column))),
    run: () => afterTurn(() => statement.run()),
    all: () => afterTurn(() => statement.all()),
    raw: (options?: { columnNames?: boolean }) =>
      afterTurn(() => (options?.columnNames ? statement.raw({ columnNames: true }) : statement.raw())),
  } as unknown as Taking;
}

/** A D1 binding whose calls take the isolate's shared turns (`turnOfTheLoop`). */
export function takingTurns(d1: D1Database): D1Database {
  return new Proxy(d1, {
    get(target, property, receiver) {
      if (property === "prepare") return (query: string) => taking(target.prepare(query));
      if (property === "batch")
        return (statements: D1PreparedStatement[]) =>
          afterTurn(() => target.batch(statements.map((statement) => (statement as Taking)[real] ?? statement)));
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The bindings with every shard's database (`DB`, `DB_2`, …) taking the isolate's shared turns. */
export const takingTurnsOnShards = <E extends object>(env: E): E =>
  Object.fromEntries(
    Object.entries(env).map(([name, binding]) => [
      name,
      /^DB(_\d+)?$/.test(name) ? takingTurns(binding as D1Database) : binding,
    ]),
  ) as E;
