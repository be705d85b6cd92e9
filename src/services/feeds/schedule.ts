// When a feed is due: hourly at a minute, or daily at a time, Amsterdam time.
import { amsterdamDay, amsterdamToUtc } from "../../lib/time";
import type { FeedSchedule } from "./schemas";

/** A feed's schedule from its columns. */
export const scheduleOf = (row: { every: "hourly" | "daily"; hour: number; minute: number }): FeedSchedule =>
  row.every === "hourly"
    ? { every: "hourly", minute: row.minute }
    : { every: "daily", hour: row.hour, minute: row.minute };

const HOUR_MS = 3_600_000;

/** The first instant after `after` the schedule names. */
export function nextRunAfter(schedule: FeedSchedule, after: Date): Date {
  if (schedule.every === "hourly") {
    // Amsterdam's offsets are whole hours: its minute past the hour is UTC's.
    const due = Math.floor(after.getTime() / HOUR_MS) * HOUR_MS + schedule.minute * 60_000;
    return new Date(due > after.getTime() ? due : due + HOUR_MS);
  }
  const today = amsterdamDay(after).date;
  const due = amsterdamToUtc(today, schedule.hour, schedule.minute);
  if (due > after) return due;
  // Noon of today plus a day is tomorrow's date in Amsterdam, whatever the clocks did overnight.
  const tomorrow = amsterdamDay(new Date(amsterdamToUtc(today, 12, 0).getTime() + 24 * HOUR_MS)).date;
  return amsterdamToUtc(tomorrow, schedule.hour, schedule.minute);
}
