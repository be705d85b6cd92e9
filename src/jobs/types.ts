/**
 * Messages on the `jobs` queue. Each names a row in D1 that holds the job's state; the message is only a
 * pointer. `requestId` is the request that caused the work, so its log lines can be tied to it.
 */
export type Job =
  | { kind: "image"; jobId: number; requestId?: string }
  | { kind: "publish"; itemId: number; requestId?: string };
