// The states of a job and the events that move it between them, with what an event carries: the
// vocabulary of the state machine (lifecycle.ts) and of the events it writes (events.ts).
import { sql } from "drizzle-orm";
import { publishJobs } from "../../../db/schema";
import type { PublishJobRef } from "../../shared/jobMessages";

export type PublishJobRow = typeof publishJobs.$inferSelect;
export type JobState = PublishJobRow["status"];
/**
 * `queued` is written by `queueJobs` (it needs the conditional insert); the others are transitions.
 * `cancelled` is a client's (DELETE /publish/ before the job started); `superseded` is the consumer's
 * (an update it claimed and found a newer change of the same listing behind).
 */
export type JobEvent = "started" | "retrying" | "succeeded" | "failed" | "cancelled" | "superseded";

/** What a marketplace (or the website) answered for a placement or update. */
export interface ListingOutcome {
  remoteAdId?: number;
  /** The marketplace account that holds a placed listing. */
  remoteAccountId?: number | null;
  online?: boolean;
  startDate?: string | null;
  closeDate?: string | null;
}

export interface EventDetail {
  now: string;
  /** failed: the reason shown as errorReason; retrying: the transient error. */
  reason?: string;
  /** retrying: when the queue will deliver the job again. */
  retryAt?: string;
  outcome?: ListingOutcome;
  /** retrying: the job waits for a connection to ask its marketplace through (the account it may be at). */
  waiting?: { account: number | null };
  /** When the job's wait started, as the job was claimed (null or absent: it was not waiting). */
  waitingSince?: string | null;
  /**
   * failed: settled without asking the marketplace, which could not be asked; recorded for reconciliation
   * with the account the job may be at.
   */
  unresolved?: { account: number | null };
}

export type JobRef = PublishJobRef;

/** Why a job of a deleted ad (or of a deleted user) that never reached the marketplace ended unpaid. */
export const DELETED_BEFORE_START = "the advertisement or its user was deleted before the job started";

/** From which states each event may move a job, and to which. */
export const JOB_TRANSITIONS: Record<JobEvent, { from: JobState[]; to: JobState }> = {
  started: { from: ["pending"], to: "processing" },
  retrying: { from: ["processing"], to: "pending" },
  succeeded: { from: ["processing"], to: "done" },
  failed: { from: ["pending", "processing"], to: "error" },
  // A client cancels only what never started (see `neverStarted`): once claimed, a job may have reached
  // the marketplace, even if it is pending again after a crash or a transient failure.
  cancelled: { from: ["pending"], to: "cancelled" },
  superseded: { from: ["processing"], to: "cancelled" },
};

/** Holds when this very batch moved the job (it is in the event's target state, stamped with the batch's clock). */
export const movedNow = (itemId: number, state: JobState, now: string) =>
  sql`EXISTS (SELECT 1 FROM ${publishJobs} WHERE ${publishJobs.id} = ${itemId} AND ${publishJobs.status} = ${state} AND ${publishJobs.updatedAt} = ${now})`;
