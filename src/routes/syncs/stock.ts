import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { NDJSON, streamsLines } from "../../lib/calls";
import { sha256Hex } from "../../lib/crypto";
import { DomainError } from "../../lib/errors";
import { digestingBody, itemLines, jsonStockItems, ndjsonLines, type Stock } from "../../services/syncs";

/** A JSON media type: `application/json`, or one of its `+json` kinds, with any parameters. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

const STOCK_REQUIRED = `body: is required: the stock, as JSON ({"items": [...]}) or as ${NDJSON}`;

/**
 * The compression a stock is sent with: none, or for NDJSON gzip or deflate (decompressed as it arrives,
 * a line at a time, so never held whole). A JSON stock is sent as it is (its 1 MiB limit is of its bytes).
 */
function contentEncodingOf(header: string | undefined, lines: boolean): "gzip" | "deflate" | undefined {
  const encoding = header?.trim().toLowerCase();
  if (!encoding || encoding === "identity") return undefined;
  if (lines && (encoding === "gzip" || encoding === "deflate")) return encoding;
  throw DomainError.of(
    "unsupported_media_type",
    lines
      ? `body: Content-Encoding must be gzip, deflate or none (it is ${encoding})`
      : `body: Content-Encoding must be none for a JSON stock (it is ${encoding}); send NDJSON to compress it`,
  );
}

/** How long an NDJSON stock may send nothing before its sync is ended (SYNC_UPLOAD_STALL_SECONDS). */
const DEFAULT_STALL_SECONDS = 60;

/** A JSON body's stock, validated whole (within the 1 MiB limit of every JSON body). */
async function jsonItems(c: Context<AppEnv>): Promise<unknown[]> {
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw DomainError.of("malformed_body", "body: malformed JSON");
  }
  return jsonStockItems(value);
}

/**
 * The stock a request sends, which it must send (an empty stock is `{"items": []}`, said on purpose): NDJSON
 * (an item a line) read as it arrives, its SHA-256 taken as it passes (a `DigestStream` beside the reader);
 * or a JSON body's `items`, each item checked on its own. The route reads the body itself: a validator of
 * the JSON would refuse the NDJSON.
 */
export async function stockOf(c: Context<AppEnv>): Promise<Stock> {
  const contentType = c.req.header("Content-Type");
  const raw = c.req.raw.body;
  if (!contentType && !raw) throw DomainError.of("validation_failed", STOCK_REQUIRED);
  const encoding = contentEncodingOf(c.req.header("Content-Encoding"), streamsLines(contentType));
  if (streamsLines(contentType) && raw) {
    // Decompressed as it arrives; the digest is of the stock itself, however it was sent.
    const { body, digest } = digestingBody(encoding ? raw.pipeThrough(new DecompressionStream(encoding)) : raw);
    const stallSeconds = Number(c.env.SYNC_UPLOAD_STALL_SECONDS) || DEFAULT_STALL_SECONDS;
    return { lines: ndjsonLines(body, { stallSeconds, malformed: "refuse" }), digest };
  }
  if (!JSON_TYPE.test(contentType ?? ""))
    throw DomainError.of("unsupported_media_type", `body: Content-Type must be application/json or ${NDJSON}`);
  const items = await jsonItems(c);
  return {
    lines: itemLines(items),
    digest: async () => sha256Hex(JSON.stringify(items)),
  };
}
