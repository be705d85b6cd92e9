import type { Env } from "../../env";
import { outboundTimeOf } from "../../lib/outboundClock";

/** A client's lanes: one Durable Object per client id (src/jobs/clientLanes.ts). */
export const clientLanesOf = (env: Env, clientId: number) =>
  env.CLIENT_LANES.get(env.CLIENT_LANES.idFromName(String(clientId)));

/** How long a request holds lane slots at most (a hold its request never gave back lapses then). */
const HOLD_MS = 30_000;

/**
 * Runs `work` on each item within the client's share of the marketplace lane: as many at once as the
 * client's lanes object (src/jobs/clientLanes.ts) grants, the slots its publish jobs use too, so a dry
 * run's marketplace calls and the client's jobs share one limit. Items still waiting after `patienceMs`
 * are handed to `notRun` instead.
 */
export async function inMarketplaceShare<T>(
  env: Env,
  clientId: number,
  items: readonly T[],
  work: (item: T) => Promise<void>,
  options: { patienceMs: number; notRun: (item: T) => void },
): Promise<void> {
  const lanes = clientLanesOf(env, clientId);
  const waiting = [...items];
  const giveUpAt = Date.now() + options.patienceMs;
  while (waiting.length > 0) {
    const hold = await lanes.hold("marketplace", waiting.length, HOLD_MS);
    if (hold.slots === 0) {
      if (Date.now() + hold.retryAfterMs > giveUpAt) break;
      await new Promise((resolve) => setTimeout(resolve, hold.retryAfterMs));
      continue;
    }
    const taken = waiting.splice(0, hold.slots);
    let spentMs = 0;
    try {
      spentMs = await outboundTimeOf(async () => {
        await Promise.all(taken.map(work));
      });
    } finally {
      await lanes.release(hold.id, spentMs);
    }
  }
  for (const item of waiting) options.notRun(item);
}
