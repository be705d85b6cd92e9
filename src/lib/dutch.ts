import { z } from "@hono/zod-openapi";

/** Dutch address rules shared by users and contacts. */
export const COUNTIES = ["DR", "FL", "FR", "GE", "GR", "LI", "NB", "NH", "OV", "UT", "ZE", "ZH"] as const;

/** A county as stored: one of the Dutch ones, or empty outside the Netherlands. */
export type County = (typeof COUNTIES)[number] | "";

const DUTCH_POSTAL_CODE = /^([1-9]\d{3})\s?([A-Za-z]{2})$/;

/** `1234 AB` for a valid Dutch postal code, otherwise null. */
export function normalizeDutchPostalCode(value: string): string | null {
  const match = DUTCH_POSTAL_CODE.exec(value.trim());
  if (!match) return null;
  const letters = (match[2] ?? "").toUpperCase();
  // SA, SD and SS are not issued.
  if (letters === "SA" || letters === "SD" || letters === "SS") return null;
  return `${match[1]} ${letters}`;
}

export const countyField = () =>
  z.enum([...COUNTIES, ""]).openapi({
    description: `One of ${COUNTIES.join(", ")}; empty outside the Netherlands (a rule across fields: docs/validation.md)`,
  });

export const INVALID_POSTAL_CODE = "must be a valid Dutch postal code (1234 AB)";
