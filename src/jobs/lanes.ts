import type { JobMessage } from "../services/shared";

/**
 * The lanes clients share, and each client's share of each: `slots` of its jobs in flight at once, and
 * `secondsPerMinute` of outbound time per key (a webhook endpoint, an image host, or the whole lane: the
 * time the job waits on the world outside, src/lib/outboundClock.ts), so a client whose endpoints or hosts
 * are slow gets fewer turns, not more of everyone's time, and a slow platform throttles no one.
 * `attempts` is how often a job that fails unexpectedly is run before it is given up (as the queue's
 * dead-letter consumer would); `together`: the lane's jobs that start at one moment run as one batch.
 */
export const LANE_SHARES = {
  marketplace: { slots: 25, secondsPerMinute: 300, attempts: 6, together: true },
  images: { slots: 2, secondsPerMinute: 60, attempts: 6, together: false },
  webhooks: { slots: 4, secondsPerMinute: 30, attempts: 4, together: false },
  "webhooks-slow": { slots: 2, secondsPerMinute: 60, attempts: 4, together: false },
  // A stock sync's steps, one at a time: what they queue takes the client's other lanes.
  syncs: { slots: 1, secondsPerMinute: 60, attempts: 6, together: false },
  // A feed's fetch, one at a time: the sync it starts takes the syncs lane.
  feeds: { slots: 1, secondsPerMinute: 60, attempts: 3, together: false },
} as const satisfies Record<string, { slots: number; secondsPerMinute: number; attempts: number; together: boolean }>;
export type Lane = keyof typeof LANE_SHARES;
export const LANES = Object.keys(LANE_SHARES) as Lane[];

/**
 * One job handed to a client's lanes: the queue it was meant for (the executor reads a delivery's lane
 * from it), its lane and share key, and how long it waits before it may start.
 */
export interface LaneJob {
  queue: string;
  lane: Lane;
  key: string;
  message: JobMessage;
  delaySeconds?: number;
}
