import { z } from "@hono/zod-openapi";

/** Field builders shared by the resource schemas, so a rule is written once with one message. */

/** A string of min..max characters, with the message the spec's limits read as. */
export const text = (min: number, max: number) =>
  z
    .string()
    .min(min, { error: `must be ${min}-${max} characters` })
    .max(max, { error: `must be ${min}-${max} characters` });

/** A string of at most max characters. */
export const upTo = (max: number) => z.string().max(max, { error: `must be at most ${max} characters` });

export const id = () => z.number().int().positive();

/** Booleans in query strings: true/false/1/0. */
export const queryBool = () =>
  z
    .enum(["true", "false", "1", "0"])
    .transform((v) => v === "true" || v === "1")
    .openapi({ type: "boolean" });

/** Positive integers in query strings and path segments. */
export const queryInt = (min = 1, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, { error: "must be a whole number" })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: "integer", minimum: min, maximum: max === Number.MAX_SAFE_INTEGER ? undefined : max });

/** Paging parameters of list endpoints: page from 1, itemsPerPage within the resource's bounds. */
export const pagingQuery = (maxItemsPerPage: number, defaultItemsPerPage = 25) =>
  z.object({
    useCache: queryBool().optional(),
    page: queryInt(1).optional().default(1),
    itemsPerPage: queryInt(1, maxItemsPerPage).optional().default(defaultItemsPerPage),
  });

/** An id in the path, e.g. `/users/{userId}`. */
export const pathId = (name: string) => queryInt().openapi({ param: { name, in: "path" } });
