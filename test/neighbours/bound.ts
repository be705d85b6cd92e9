// The noisy-neighbour suite's yardstick: client B's ordinary operation, timed alone (its baseline) and
// while client A saturates a shared lane, both in the same run, so a busy machine slows both alike.
import { expect } from "vitest";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** B's operation under A's load takes at most max(2 × baseline, baseline + 5 s). */
export function expectWithinNeighbourBound(operation: string, baselineMs: number, underLoadMs: number) {
  const bound = Math.max(2 * baselineMs, baselineMs + 5_000);
  console.log(`${operation}: alone ${baselineMs} ms, beside A ${underLoadMs} ms (bound ${bound} ms)`);
  expect.soft(underLoadMs, `${operation} beside A (alone: ${baselineMs} ms)`).toBeLessThanOrEqual(bound);
}

/** Milliseconds `operation` takes. */
export async function timed(operation: () => Promise<unknown>): Promise<number> {
  const started = Date.now();
  await operation();
  return Date.now() - started;
}
