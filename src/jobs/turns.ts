/**
 * Turns of the event loop taken by every D1 call of an isolate's lanes work, in time slots of
 * TURN_EVERY_MS. workerd looks at its timers and sockets only when no event is ready, and a job's D1
 * answers keep events ready while it is mid-chain: locally, where D1 runs in the same process, many
 * clients' jobs held every timer and socket of the process between them (an image host's bytes, a test's
 * 100 ms wait that took 11 s). At the first D1 call of each slot, an object's calls wait on one timer of
 * its own (an I/O object may not cross Durable Objects); the slots are the clock's, the same for every
 * object, so their chains pause together and the process's timers and sockets get in.
 */

/** How long lanes work runs between turns of the event loop. */
const TURN_EVERY_MS = 10;

/** One Durable Object's turns: the slot it last turned in, and the turn under way. */
interface Turns {
  slot: number;
  turning: Promise<void> | undefined;
}

/** The object's turn when one is due or under way (its calls then wait for it), or nothing. */
function turnOfTheLoop(turns: Turns): Promise<void> | undefined {
  if (turns.turning) return turns.turning;
  const slot = Math.floor(Date.now() / TURN_EVERY_MS);
  if (slot === turns.slot) return undefined;
  turns.slot = slot;
  turns.turning = scheduler.wait(0).then(() => {
    turns.turning = undefined;
  });
  return turns.turning;
}

const afterTurn =
  (turns: Turns) =>
  <T>(work: () => Promise<T>): Promise<T> => {
    const turn = turnOfTheLoop(turns);
    return turn ? turn.then(work) : work();
  };

const real = Symbol("statement");
type Taking = D1PreparedStatement & { [real]: D1PreparedStatement };

function taking(statement: D1PreparedStatement, after: ReturnType<typeof afterTurn>): Taking {
  return {
    [real]: statement,
    bind: (...values: unknown[]) => taking(statement.bind(...values), after),
    first: (column?: string) => after(() => (column === undefined ? statement.first() : statement.first(column))),
    run: () => after(() => statement.run()),
    all: () => after(() => statement.all()),
    raw: (options?: { columnNames?: boolean }) =>
      after(() => (options?.columnNames ? statement.raw({ columnNames: true }) : statement.raw())),
  } as unknown as Taking;
}

/** A D1 binding whose calls take the turns of `turns` (`turnOfTheLoop`). */
function takingTurns(d1: D1Database, turns: Turns): D1Database {
  const after = afterTurn(turns);
  return new Proxy(d1, {
    get(target, property, receiver) {
      if (property === "prepare") return (query: string) => taking(target.prepare(query), after);
      if (property === "batch")
        return (statements: D1PreparedStatement[]) =>
          after(() => target.batch(statements.map((statement) => (statement as Taking)[real] ?? statement)));
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The bindings with every shard's database (`DB`, `DB_2`, …) taking turns: one object's (its constructor's). */
export function takingTurnsOnShards<E extends object>(env: E): E {
  const turns: Turns = { slot: 0, turning: undefined };
  return Object.fromEntries(
    Object.entries(env).map(([name, binding]) => [
      name,
      /^DB(_\d+)?$/.test(name) ? takingTurns(binding as D1Database, turns) : binding,
    ]),
  ) as E;
}
