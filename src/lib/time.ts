/** Rendering of instants in the spec's format, in Europe/Amsterdam time. Storage is always UTC ISO-8601. */
export const UNSET_DATETIME = "0000-00-00 00:00:00";
export const TIME_ZONE = "Europe/Amsterdam";

const amsterdam = new Intl.DateTimeFormat("en-GB", {
  timeZone: TIME_ZONE,
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

const HOUR_MS = 3_600_000;
/** Amsterdam's UTC offset per UTC hour, as far as asked: a page of ads formats its dates in few hours. */
const offsetByHour = new Map<number, number>();

/**
 * Amsterdam's UTC offset in ms at `ms`. Amsterdam's offset has changed only on whole UTC hours since 1940,
 * so Intl (microseconds a call, two dates and more per ad) answers once per hour and arithmetic does the rest.
 */
function amsterdamOffset(ms: number): number {
  const hour = Math.floor(ms / HOUR_MS);
  let offset = offsetByHour.get(hour);
  if (offset === undefined) {
    const parts: Record<string, string> = {};
    for (const p of amsterdam.formatToParts(hour * HOUR_MS)) parts[p.type] = p.value;
    const wall = Date.UTC(
      Number(parts.year),
      Number(parts.month) - 1,
      Number(parts.day),
      Number(parts.hour),
      Number(parts.minute),
      Number(parts.second),
    );
    offset = wall - hour * HOUR_MS;
    if (offsetByHour.size >= 10_000) offsetByHour.clear();
    offsetByHour.set(hour, offset);
  }
  return offset;
}

/** Wall-clock parts of an instant in Amsterdam. */
export function amsterdamParts(instant: Date) {
  const wall = new Date(instant.getTime() + amsterdamOffset(instant.getTime()));
  return {
    year: wall.getUTCFullYear(),
    month: wall.getUTCMonth() + 1,
    day: wall.getUTCDate(),
    hour: wall.getUTCHours(),
    minute: wall.getUTCMinutes(),
    second: wall.getUTCSeconds(),
  };
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** `YYYY-MM-DD hh:mm:ss` in Amsterdam time; null/undefined render as the spec's unset value. */
export function formatDateTime(value: string | Date | null | undefined): string {
  if (value === null || value === undefined || value === "") return UNSET_DATETIME;
  const instant = typeof value === "string" ? new Date(value) : value;
  if (Number.isNaN(instant.getTime())) return UNSET_DATETIME;
  const p = amsterdamParts(instant);
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}`;
}

export const nowIso = () => new Date().toISOString();

const WEEKDAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"] as const;

/** The Amsterdam calendar date (yyyy-mm-dd) and weekday of an instant. */
export function amsterdamDay(instant: Date) {
  const p = amsterdamParts(instant);
  const date = `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}`;
  return { date, weekday: WEEKDAY_NAMES[new Date(`${date}T12:00:00Z`).getUTCDay()] as string };
}

/**
 * The instant at which Amsterdam clocks show `hh:mm` on `date`. Amsterdam is UTC+1 or UTC+2: on the
 * autumn day a time that occurs twice answers its first occurrence; on the spring day a time in the
 * skipped hour answers the instant it would have had before the change (02:30 → 03:30 summer time).
 */
export function amsterdamToUtc(date: string, hh: number, mm: number): Date {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  const wall = Date.UTC(y, m - 1, d, hh, mm);
  for (const offsetHours of [2, 1]) {
    const candidate = new Date(wall - offsetHours * 3_600_000);
    const p = amsterdamParts(candidate);
    if (p.hour === hh && p.minute === mm && p.day === d) return candidate;
  }
  return new Date(wall - 3_600_000);
}
