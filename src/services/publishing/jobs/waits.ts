// How long a job that may be at its marketplace waits for a connection to ask through, and how the wait ends.
import type { ConnectionRow } from "../connections";
import type { PublishJobRow } from "./states";

/**
 * The longest a job that may be at its marketplace waits for a connection to ask through, from the first
 * run that could not ask (docs/publishing.md, "Waits and their end").
 */
export const WAIT_BOUND_MS = 24 * 3_600_000;
export const WAITING_FOR_CONNECTION = "waiting for the user to connect the portal again";
const KEPT_FOR_RECONCILIATION = "refunded, and recorded (job.unresolved) for reconciliation with the marketplace";

/** A job settled without an answer: the marketplace account it may be at, for the record (null: none known). */
export type Unresolved = { account: number | null };

/** The account a job that may be at its marketplace went to: the one its wait began on, or the user's last one. */
export const accountAtStake = (job: PublishJobRow, connection: ConnectionRow | undefined): Unresolved => ({
  account: job.waitingAccount ?? connection?.externalUserId ?? null,
});

/** The job has waited for an answer from its marketplace for the whole bound. */
export const pastWaitBound = (job: PublishJobRow) =>
  job.waitingSince !== null && Date.now() - Date.parse(job.waitingSince) >= WAIT_BOUND_MS;

/** Why a job settled without an answer from its marketplace failed. */
export const unresolvedAfterBound = (job: PublishJobRow, why: string) =>
  `unresolved: ${job.portal} could not be asked for ${WAIT_BOUND_MS / 3_600_000} hours (${why}); ${KEPT_FOR_RECONCILIATION}`;

/**
 * Why a job that may be at its marketplace is settled without asking it: its user was deleted, so no
 * connection will come back; it waited past the bound; or the user connected another account while it
 * waited (the job stays apart from the new account). Undefined: it may go on (or wait).
 */
export function unresolvedWait(job: PublishJobRow, connection: ConnectionRow | undefined, departed: boolean) {
  if (!connection?.status) {
    if (departed)
      return `unresolved: the user was deleted while the job could not ask ${job.portal}; ${KEPT_FOR_RECONCILIATION}`;
    if (pastWaitBound(job)) return unresolvedAfterBound(job, "no connection");
    return undefined;
  }
  if (job.waitingSince !== null && job.waitingAccount !== null && connection.externalUserId !== job.waitingAccount)
    return `unresolved: the user connected another ${job.portal} account while the job waited for account ${job.waitingAccount}; ${KEPT_FOR_RECONCILIATION}`;
  return undefined;
}

/** How long a job whose outcome could not be settled waits before the cron sends it again. */
export const SETTLE_AGAIN_MS = 5 * 60_000;
