/**
 * One JSON line per event, so the platform's log search (Workers Logs) can filter on any field. Work a
 * request caused carries its `requestId` (queue messages carry it; a cron run has its own `cron-…` id).
 */
export function log(level: "info" | "warn" | "error", msg: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ level, msg, ...fields });
  if (level === "error") console.error(line);
  else console.log(line);
}
