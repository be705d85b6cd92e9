import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { validationFailed } from "../lib/errors";

/**
 * One wording for zod's issues across the API, so every 400 reads `<field>: <problem>`.
 * Installed once at start-up (see app.ts).
 */
const articles: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  array: "an array",
  object: "an object",
  date: "a date",
};

export function installZodMessages(): void {
  z.config({
    customError: (issue) => {
      switch (issue.code) {
        case "invalid_type":
          if (issue.input === undefined) return "is required";
          return `must be ${articles[issue.expected] ?? issue.expected}`;
        case "too_small":
          if (issue.origin === "string") return `must be at least ${issue.minimum} characters`;
          if (issue.origin === "array") return `must have at least ${issue.minimum} items`;
          return `must be at least ${issue.minimum}`;
        case "too_big":
          if (issue.origin === "string") return `must be at most ${issue.maximum} characters`;
          if (issue.origin === "array") return `must have at most ${issue.maximum} items`;
          return `must be at most ${issue.maximum}`;
        case "invalid_format":
          if (issue.format === "email") return "must be a valid e-mail address";
          if (issue.format === "url") return "must be a valid URL";
          return "has an invalid format";
        case "invalid_value":
          return `must be one of: ${issue.values.map((v) => (v === "" ? '""' : String(v))).join(", ")}`;
        case "invalid_union":
          return "has an invalid value";
        case "unrecognized_keys":
          return "unknown field";
        case "not_multiple_of":
          return `must be a multiple of ${issue.divisor}`;
        default:
          return undefined;
      }
    },
  });
}

/** Flattens zod issues into envelope messages; unknown keys get one message each. */
export function issueMessages(error: z.ZodError, root = "body"): string[] {
  const messages: string[] = [];
  for (const issue of error.issues) {
    const path = issue.path.map(String).join(".");
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) messages.push(`${path ? `${path}.` : ""}${key}: ${issue.message}`);
      continue;
    }
    messages.push(`${path || root}: ${issue.message}`);
  }
  return [...new Set(messages)];
}

/** Default hook of every router: a failed validation becomes a 400 envelope. */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target?: string },
  _c: Context,
): void {
  if (!result.success) {
    const root = result.target === "json" ? "body" : (result.target ?? "body");
    throw validationFailed(...issueMessages(result.error, root));
  }
}
