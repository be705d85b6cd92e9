/**
 * The time work spends waiting on the world outside: a webhook endpoint's answer, an image host's bytes,
 * a marketplace's reply. A client's share of a lane is charged this time, not the job's wall time, so a
 * platform that is slow itself (a busy machine, a slow database) throttles no client for it, while a
 * client whose endpoints or hosts are slow pays for their slowness.
 */
import { AsyncLocalStorage } from "node:async_hooks";

const clock = new AsyncLocalStorage<{ ms: number }>();

/** Runs `call`, an outbound call (through its last byte), counting its time on the clock `work` runs under. */
export async function outboundCall<T>(call: () => Promise<T>): Promise<T> {
  const startedAt = Date.now();
  try {
    return await call();
  } finally {
    const spent = clock.getStore();
    if (spent) spent.ms += Date.now() - startedAt;
  }
}

/** Runs `work` and answers the milliseconds of its outbound calls (side by side ones add up). */
export async function outboundTimeOf(work: () => Promise<void>): Promise<number> {
  const spent = { ms: 0 };
  await clock.run(spent, work);
  return spent.ms;
}
