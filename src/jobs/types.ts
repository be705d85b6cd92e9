/** Messages on the `jobs` queue. Each names a row in D1 that holds the job's state; the message is only a pointer. */
export type Job = { kind: "image"; jobId: number } | { kind: "publish"; itemId: number };
