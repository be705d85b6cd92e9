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

/**
 * The id of a row the API issues: an integer that may pass 2^31 − 1 (a table's ids come in blocks, and
 * past its 32-bit blocks the next are wider: docs/versioning.md), always within 2^53 − 1, so exact as a
 * JSON number. `format: int64` tells a generated client to give it a 64-bit type.
 */
export const rowId = () => z.number().int().openapi({ format: "int64", maximum: Number.MAX_SAFE_INTEGER });

/** A row's id as a request names it: positive. */
export const id = () => z.number().int().positive().openapi({ format: "int64", maximum: Number.MAX_SAFE_INTEGER });

/** A calendar date, `yyyy-mm-dd` (`format: date`: a generated client gives it a date type). */
export const calendarDate = () =>
  z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { error: "must be a date yyyy-mm-dd" })
    .refine(
      (v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v),
      {
        error: "must be a date yyyy-mm-dd",
      },
    )
    .openapi({ format: "date" });

/**
 * A value of an answer that may grow within /v1 (an error code, an event type, a job's kind or state, a
 * sync's state or an item's outcome): the known values listed, any other string allowed, so a client
 * generated from the document reads a value added later instead of failing on it (docs/versioning.md).
 */
export const openEnum = <T extends string>(values: readonly [T, ...T[]], description: string) =>
  z
    .union([z.enum(values), z.string().openapi({ description: "A value added after this version of the document" })])
    .openapi({ description: `${description} Open: new values may be added within /v1.` });

/** Where a rule across fields or items is listed (a JSON Schema of one field cannot state it). */
const ACROSS = "docs/validation.md";

/** A field's description with the rule across fields that also holds it. */
export const acrossFields = (rule: string, description?: string) =>
  `${description ? `${description}. ` : ""}${rule} (a rule across fields: ${ACROSS})`;

/** A list holding at most one item per value of `key` (one settings object per portal, …). */
export const onePer = <T extends z.ZodType>(list: z.ZodArray<T>, key: string, description?: string) =>
  list
    .refine((items) => new Set(items.map((item) => (item as Record<string, unknown>)[key])).size === items.length, {
      error: `each ${key} may appear once`,
    })
    .openapi({ description: acrossFields(`At most one item per ${key}`, description) });

/** Booleans in query strings: true/false/1/0. */
export const queryBool = () =>
  z
    .enum(["true", "false", "1", "0"])
    .transform((v) => v === "true" || v === "1")
    .openapi({ type: "boolean" });

/** A field set on create that a write may repeat: equal to the stored value, or 400 `not_updatable`. */
export const fixed = <T extends z.ZodType>(schema: T) =>
  schema.openapi({ description: "Fixed: must equal the stored value" });

/** Positive integers in query strings and path segments. */
export const queryInt = (min = 1, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .regex(/^\d+$/, { error: "must be a whole number" })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: "integer", minimum: min, maximum: max });

/** A row's id in a query string (`rowId`'s width). */
export const queryId = () => queryInt().openapi({ format: "int64" });

const ID_TEXT = queryId();

/**
 * The id a path segment or a query value names, as `queryId` validates it (any width up to 2^53 − 1), or
 * undefined: what the shard router reads an internal client's ids by, so it reads every id the routes take.
 */
export const idOfText = (text: string): number | undefined => ID_TEXT.safeParse(text).data;

const escapedForPattern = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Members of a fixed list in a query string, one or several comma-separated (spaces around a comma
 * allowed): the pattern is in the document, so a client sees the list a value is checked against.
 */
export const commaSeparated = <T extends string>(values: readonly [T, ...T[]], description: string) => {
  const member = `(${values.map(escapedForPattern).join("|")})`;
  const pattern = new RegExp(`^ *${member} *(, *${member} *)*$`);
  return (
    z
      .string()
      .regex(pattern, { error: `must be one or more of: ${values.join(", ")}, comma-separated` })
      .transform((value) => value.split(",").map((member) => member.trim()) as T[])
      // A transform hides the check from the document: the same pattern, stated.
      .openapi({ type: "string", pattern: pattern.source, description })
  );
};

/** Paging parameters of list endpoints: page from 1, itemsPerPage within the resource's bounds. */
export const pagingQuery = (maxItemsPerPage: number, defaultItemsPerPage = 25) =>
  z.object({
    useCache: queryBool().optional(),
    page: queryInt(1).optional().default(1),
    itemsPerPage: queryInt(1, maxItemsPerPage).optional().default(defaultItemsPerPage),
  });

/** An id in the path, e.g. `/users/{userId}`. */
export const pathId = (name: string) => queryId().openapi({ param: { name, in: "path" } });

/** A stored URL as a whole URL: the spec lets a bare host (`www.example.nl`) stand for https. */
export const absoluteWebUrl = (value: string) =>
  /^[a-z][a-z0-9+.-]*:/i.test(value) ? value : `https://${value.replace(/^\/+/, "")}`;

/** A URL in stored data (an ad's url, a website, a video): http or https only; a bare host means https. */
export const isWebUrl = (value: string) => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters and spaces never belong in a URL.
  if (/[\u0000-\u0020\u007f]/.test(value)) return false;
  try {
    const url = new URL(absoluteWebUrl(value));
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
};

/**
 * A web URL's shape, as the document states it: http(s):// with optional user information, a host and an
 * optional port, or a bare host (https; a port after a bare host would read as a scheme); then a path,
 * query or fragment without white space or control characters. The check after it is the URL parser's.
 *
 * A host is an IPv4 address or a name whose last label is not a number (`1.2.3` would be read as an
 * address). Labels take ASCII letters, digits, `_`, `-` and the letters of the Latin, Greek, Cyrillic, Japanese and
 * CJK blocks the URL parser's IDNA step takes at any place in a label (`café.nl`).
 */
/** Those letters, written as characters (JSON Schema generators misread \u escapes). */
const LABEL_LETTERS = "À-ÖØ-öø-ɏά-ώЀ-҂Ҋ-ҿぁ-ゖァ-ヺ一-龥";
const LABEL_CHAR = `[A-Za-z0-9_${LABEL_LETTERS}-]`;
const LABEL_LETTER = `[A-Za-z_${LABEL_LETTERS}]`;
const OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const HOST_NAME = `(${LABEL_CHAR}+\\.)*${LABEL_CHAR}*${LABEL_LETTER}${LABEL_CHAR}*`;
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
const HOST = `(${HOST_NAME}|${IPV4})`;
/** A host with a dot in it (a video's). */
const DOTTED_HOST = `(${LABEL_CHAR}+\\.${HOST_NAME}|${IPV4})`;
/** User information before a host (`user:password@`); a bare host's cannot hold a colon (it would read as a scheme). */
const USER_INFO = "([^\\s\\x00-\\x1f\\x7f/?#@\\\\\\[\\]]+@)?";
const BARE_USER_INFO = "([^\\s\\x00-\\x1f\\x7f/?#@:\\\\\\[\\]]+@)?";
/** A TCP port, 1 to 65535, as a pattern. */
export const PORT = "(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})";
const AFTER_HOST = "([/?#][^\\s\\x00-\\x1f\\x7f]*)?";
const WEB_SCHEME = "[hH][tT][tT][pP][sS]?://";
const authority = (host: string) => `(${WEB_SCHEME}${USER_INFO}${host}(:${PORT})?|${BARE_USER_INFO}${host})`;
const WEB_URL = new RegExp(`^$|^${authority(HOST)}${AFTER_HOST}$`);

/** A web URL of at most max characters; `shape` narrows it (a video's: an .mp4 path), in one pattern. */
export const webUrl = (max: number, shape = { pattern: WEB_URL, error: "must be an http or https URL" }) =>
  upTo(max)
    .regex(shape.pattern, { error: shape.error })
    .refine((value) => value === "" || isWebUrl(value), { error: "must be an http or https URL" });

/** An http(s) URL of an .mp4 video: WEB_URL's shape, with a dot in the host and a path ending in .mp4. */
export const VIDEO_URL = {
  pattern: new RegExp(
    `^${authority(DOTTED_HOST)}/[^\\s\\x00-\\x1f\\x7f?#]*\\.[mM][pP]4(\\?[^\\s\\x00-\\x1f\\x7f#]*)?$`,
  ),
  error: "must be the URL of an mp4 video",
};

/**
 * Free text a search matches on (LIKE or FTS5): control characters (a NUL would end the pattern and
 * widen the match) are refused, never passed on.
 */
export const searchText = (max: number) =>
  z
    .string()
    .max(max, { error: `must be at most ${max} characters` })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
    .regex(/^[^\x00-\x1f\x7f]*$/, { error: "must not contain control characters" });

/**
 * A field that answers carry and writes do not change: accepted in any form, so that a resource read with
 * GET can be sent back whole (`takingResponse` then drops it).
 */
export const readOnly = () => z.unknown().optional().openapi({ readOnly: true, description: "Read-only: ignored" });

type ReadOnlyShape<Answer, Input> = { [K in Exclude<keyof Answer, keyof Input>]: ReturnType<typeof readOnly> };

/**
 * A write's input that also takes its resource as answers show it: every field of `answer` the write does
 * not name is read-only, accepted and dropped, so the write sees only its own fields. Derived from the
 * answer, so a field added to a response is never unknown on a write; any other field is (the object is
 * strict).
 */
export function takingResponse<Input extends z.ZodRawShape, Answer extends z.ZodRawShape>(
  input: z.ZodObject<Input>,
  answer: z.ZodObject<Answer>,
) {
  const ignored = Object.keys(answer.shape).filter((key) => !(key in input.shape));
  return input
    .extend(Object.fromEntries(ignored.map((key) => [key, readOnly()])) as ReadOnlyShape<Answer, Input>)
    .strict()
    .transform((value) => {
      const written: Record<string, unknown> = { ...value };
      for (const key of ignored) delete written[key];
      return written as z.output<z.ZodObject<Input>>;
    });
}
