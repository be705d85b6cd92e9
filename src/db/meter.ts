import type { D1Usage } from "../env";

interface UpstreamResult {
  meta?: { rows_read?: number; rows_written?: number };
}
type Send = (...args: unknown[]) => Promise<UpstreamResult | UpstreamResult[]>;

/**
 * Meters a D1 session: every statement it runs (`all`, `first`, `run`, `raw` and `batch`) reports
 * `rows_read` and `rows_written`, which are added to the usage returned. D1's public `raw()`, the one
 * Drizzle's single selects use, drops the meta, so the meter sits on the session's one upstream call
 * (`_sendOrThrow`, which every statement of the session goes through). Should a runtime rename it, nothing
 * breaks: the session runs unmetered and the usage reads zero, which `test/adViews/list-cost.test.ts` notices.
 */
export function meterSession(session: D1DatabaseSession): D1Usage {
  const usage: D1Usage = { rowsRead: 0, rowsWritten: 0 };
  const target = session as unknown as { _sendOrThrow?: Send };
  const send = target._sendOrThrow;
  if (typeof send !== "function") return usage;
  target._sendOrThrow = async (...args) => {
    const answer = await send.apply(session, args);
    for (const { meta } of Array.isArray(answer) ? answer : [answer]) {
      usage.rowsRead += meta?.rows_read ?? 0;
      usage.rowsWritten += meta?.rows_written ?? 0;
    }
    return answer;
  };
  return usage;
}
