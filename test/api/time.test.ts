import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { amsterdamToUtc, formatDateTime } from "../../src/lib/time";

/** The spec's date-time in Amsterdam as Intl renders each instant on its own (Swedish dates are ISO-like). */
const byIntl = (instant: Date) => instant.toLocaleString("sv-SE", { timeZone: "Europe/Amsterdam" });

describe("Amsterdam date-times", () => {
  it("render every instant as Intl does, across daylight-saving changes", () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-12-31T23:59:59Z"), noInvalidDate: true }),
        (d) => {
          expect(formatDateTime(d)).toBe(byIntl(d));
        },
      ),
      { numRuns: 2000 },
    );
    // The seconds either side of each change of 2026: 01:00 UTC on 29 March and 25 October.
    for (const edge of ["2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z"]) {
      for (const delta of [-1000, 0, 1000]) {
        const instant = new Date(Date.parse(edge) + delta);
        expect(formatDateTime(instant)).toBe(byIntl(instant));
      }
    }
    expect(formatDateTime("2026-03-29T00:59:59Z")).toBe("2026-03-29 01:59:59");
    expect(formatDateTime("2026-03-29T01:00:00Z")).toBe("2026-03-29 03:00:00");
    expect(formatDateTime("2026-10-25T00:59:59Z")).toBe("2026-10-25 02:59:59");
    expect(formatDateTime("2026-10-25T01:00:00Z")).toBe("2026-10-25 02:00:00");
  });

  it("turn Amsterdam wall-clock times back into instants", () => {
    expect(amsterdamToUtc("2026-07-01", 12, 30).toISOString()).toBe("2026-07-01T10:30:00.000Z");
    expect(amsterdamToUtc("2026-01-15", 8, 0).toISOString()).toBe("2026-01-15T07:00:00.000Z");
  });
});
