import { failureText } from "./triggers";

/**
 * What a database, a bucket or a Durable Object answers when it cannot serve now, as Cloudflare lists
 * them for D1 (the errors whose recommended action is to retry), Durable Objects and R2: an outage or a
 * reset, never a fault of the call. A request that meets one is answered 503 with Retry-After; anything
 * else stays a 500, a bug to log.
 */
const NOT_ANSWERING = [
  /Network connection lost/i,
  /storage caused object to be reset/i,
  /reset because its code was updated/i,
  /storage operation exceeded timeout/i,
  /Cannot resolve D1 DB due to transient issue/i,
  /D1 (DB )?is overloaded/i,
  /exceeded its (CPU time|memory) limit and was reset/i,
  /Internal error while starting up D1/i,
  /Durable Object is overloaded/i,
  /We encountered an internal error\. Please try again/i,
];

/**
 * Which dependency did not answer, when a failure is one not answering (worth a retry) rather than a bug:
 * a database (D1 names its errors `D1_ERROR`), or another service (a bucket, a Durable Object).
 */
export const notAnswering = (error: unknown): "database" | "service" | undefined => {
  const text = failureText(error);
  if (!NOT_ANSWERING.some((pattern) => pattern.test(text))) return undefined;
  return /D1_ERROR|D1 DB/.test(text) ? "database" : "service";
};
