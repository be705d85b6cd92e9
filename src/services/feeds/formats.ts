// A feed's body as a stock (src/services/syncs/stockLines.ts): NDJSON, JSON or CSV, read as it arrives.
import { z } from "@hono/zod-openapi";
import { parse as csvParser } from "csv-parse/stream";
import type { FeedFormat } from "../../db/schema";
import { sha256Hex } from "../../lib/crypto";
import { DomainError, detail } from "../../lib/errors";
import { digestingBody, itemLines, jsonStockItems, ndjsonLines, type Stock, type StockLine, SyncItem } from "../syncs";
import { MAX_LINE_BYTES, nextPart, stockLine } from "../syncs/stockReader";

/** What a feed's body may be: its bytes, how long it may send nothing, and a JSON feed's bytes (as POST /syncs/). */
export interface BodyLimits {
  maxBytes: number;
  stallSeconds: number;
  jsonMaxBytes: number;
}

/** A body that ends with `body_too_large` past `maxBytes`, counting what passed (`bytes()`). */
function counted(body: ReadableStream<Uint8Array>, maxBytes: number) {
  let bytes = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes)
        controller.error(DomainError.of("body_too_large", `body: the feed is larger than ${maxBytes} bytes`));
      else controller.enqueue(chunk);
    },
  });
  return { body: body.pipeThrough(counter), bytes: () => bytes };
}

/**
 * A feed's body as a stock, with the bytes read so far: NDJSON an item a line (a line that is no JSON
 * ends it: a page that is no feed must not end the user's ads), JSON `{items: [...]}` read whole within the
 * 1 MiB of a JSON stock, CSV a row an item under a header naming the fields (`csvLines`). Its digest is of
 * the bytes as served.
 */
export function feedStock(
  response: ReadableStream<Uint8Array>,
  format: FeedFormat,
  limits: BodyLimits,
): { stock: Stock; bytes: () => number } {
  const { body, bytes } = counted(response, format === "json" ? limits.jsonMaxBytes : limits.maxBytes);
  if (format === "json") {
    let text = "";
    const lines = (async function* () {
      text = await wholeText(body, limits.stallSeconds);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw DomainError.of("malformed_body", "body: malformed JSON");
      }
      yield* itemLines(jsonStockItems(value));
    })();
    return { stock: { lines, digest: () => sha256Hex(text) }, bytes };
  }
  const { body: reading, digest } = digestingBody(body);
  const lines =
    format === "ndjson"
      ? ndjsonLines(reading, { stallSeconds: limits.stallSeconds, malformed: "fail" })
      : csvLines(reading, limits.stallSeconds);
  return { stock: { lines, digest }, bytes };
}

/** A body's whole text, each part within `stallSeconds`. */
async function wholeText(body: ReadableStream<Uint8Array>, stallSeconds: number): Promise<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { done, value } = await nextPart(reader, stallSeconds);
    if (done) return text;
    text += value;
  }
}

/** A CSV record as csv-parse gives it with `info`: its cells and the line it ended on. */
interface CsvRecord {
  record: string[];
  info: { lines: number };
}

/**
 * A CSV feed's items, a row each: the first row names each column's field, nested ones by dotted names
 * (`price.model`, `attributes.0.values.1.key`, `images.0`); a cell is read as its field's type (a number,
 * true or false), an empty one leaves its field out. A row that is no CSV ends the stock, naming its line.
 */
export async function* csvLines(body: ReadableStream<Uint8Array>, stallSeconds: number): AsyncGenerator<StockLine> {
  const parser = csvParser({ bom: true, info: true, skip_empty_lines: true, max_record_size: MAX_LINE_BYTES });
  // csv-parse reads the bytes itself (UTF-8), a chunk at a time.
  const reader = body.pipeThrough(parser as unknown as TransformStream<Uint8Array, CsvRecord>).getReader();
  let columns: string[][] | undefined;
  let seq = 0;
  // The item's schema, read once a feed (never at startup): what type each column's field is.
  const typesAt = fieldTypes();
  for (;;) {
    let part: ReadableStreamReadResult<CsvRecord>;
    try {
      part = await nextPart(reader, stallSeconds);
    } catch (error) {
      throw csvFailure(error);
    }
    if (part.done) return;
    const { record, info } = part.value;
    if (!columns) {
      columns = headerOf(record);
      continue;
    }
    seq += 1;
    yield stockLine({ seq, line: info.lines }, itemOfRow(columns, record, typesAt));
  }
}

/** A CSV parse error as the feed's failure, naming its line. */
function csvFailure(error: unknown): unknown {
  if (!(error instanceof DomainError) || error.details[0]?.code !== "malformed_body") return error;
  const cause = error.details[0].message.replace(/^body: could not be read as sent: (CsvError: )?/, "");
  const line = /line (\d+)/.exec(cause)?.[1];
  return DomainError.of("malformed_body", `${line ? `line ${line}` : "body"}: is not CSV (${cause})`);
}

/** A dotted field name: names and indexes (`attributes.0.values.1.key`). */
const COLUMN = /^[A-Za-z_]\w*(\.(\d+|[A-Za-z_]\w*))*$/;

function headerOf(record: string[]): string[][] {
  const problems = record.flatMap((name, at) =>
    COLUMN.test(name.trim())
      ? record.indexOf(name) === at
        ? []
        : [`column ${at + 1}: ${name} is named twice`]
      : [`column ${at + 1}: "${name}" is no field name (a field, or nested fields by dotted names)`],
  );
  if (problems.length > 0)
    throw new DomainError(problems.map((problem) => detail("malformed_body", `line 1: ${problem}`)));
  return record.map((name) => name.trim().split("."));
}

/** A row's item: each non-empty cell at its column's path, read as that field's type; arrays without gaps. */
function itemOfRow(columns: string[][], record: string[], typesAt: (path: string[]) => Set<string>): unknown {
  const item: Record<string, unknown> = {};
  columns.forEach((path, at) => {
    const cell = record[at] ?? "";
    if (cell === "") return;
    let into: Record<string, unknown> | unknown[] = item;
    path.forEach((part, depth) => {
      const key = /^\d+$/.test(part) ? Number(part) : part;
      const last = depth === path.length - 1;
      const next = path[depth + 1] ?? "";
      const container = into as Record<string | number, unknown>;
      if (last) container[key] = cellValue(cell, typesAt(path));
      else {
        container[key] ??= /^\d+$/.test(next) ? [] : {};
        into = container[key] as Record<string, unknown> | unknown[];
      }
    });
  });
  return compacted(item);
}

/** Arrays with their gaps closed (a row with two of five image columns filled holds two images). */
function compacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((entry) => entry !== undefined).map(compacted);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, compacted(entry)]));
  return value;
}

/** A cell as its field's type: a number or a boolean where the item's schema has one, else the text. */
function cellValue(cell: string, types: Set<string>): unknown {
  const text = cell.trim();
  if ((types.has("integer") || types.has("number")) && /^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (types.has("boolean") && (text === "true" || text === "false")) return text === "true";
  return cell;
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
};

/** The JSON types the item's schema allows at a path (empty for a field it does not have). */
function fieldTypes(): (path: string[]) => Set<string> {
  const root = z.toJSONSchema(SyncItem, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const resolved = (schema: JsonSchema): JsonSchema[] => {
    const named = schema.$ref ? root.$defs?.[schema.$ref.replace("#/$defs/", "")] : undefined;
    if (named) return resolved(named);
    const branches = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
    return branches.length > 0 ? branches.flatMap(resolved) : [schema];
  };
  return (path) => {
    let level = resolved(root);
    for (const part of path)
      level = level.flatMap((schema) =>
        /^\d+$/.test(part)
          ? schema.items
            ? resolved(schema.items)
            : []
          : schema.properties?.[part]
            ? resolved(schema.properties[part])
            : [],
      );
    return new Set(
      level.flatMap((schema) => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [])),
    );
  };
}
