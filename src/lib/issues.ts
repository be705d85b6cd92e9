import type { z } from "@hono/zod-openapi";
import { detail, type ErrorDetail } from "./errors";

/** A field's path as messages name it: `attributes[0].values[1].key`. */
const pathText = (path: readonly PropertyKey[]) =>
  path
    .map((part, index) => (typeof part === "number" ? `[${part}]` : `${index > 0 ? "." : ""}${String(part)}`))
    .join("");

/**
 * Flattens zod issues into the problems of a 400: one per unknown key (`unknown_field`, the input is
 * strict at every depth: a misspelt field is refused, never dropped) and one per other problem
 * (`validation_failed`); a field of the wrong type, only that.
 */
export function issueDetails(error: z.ZodError, root = "body"): ErrorDetail[] {
  const details = new Map<string, ErrorDetail>();
  // A value of the wrong type has that one problem: zod still runs a schema's checks on it (a string's
  // length against an array's maximum), whose messages would not be true of the field.
  const wronglyTyped = new Set(
    error.issues.filter((issue) => issue.code === "invalid_type").map((issue) => pathText(issue.path)),
  );
  for (const issue of error.issues) {
    const path = pathText(issue.path);
    if (issue.code !== "invalid_type" && wronglyTyped.has(path)) continue;
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const message = `${path ? `${path}.` : ""}${key}: ${issue.message}`;
        details.set(message, detail("unknown_field", message));
      }
      continue;
    }
    const message = `${path || root}: ${issue.message}`;
    details.set(message, detail("validation_failed", message));
  }
  return [...details.values()];
}
