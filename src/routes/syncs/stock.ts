import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { NDJSON, streamsLines } from "../../lib/calls";
import { sha256Hex } from "../../lib/crypto";
import { DomainError, detail } from "../../lib/errors";
import { type Stock, type StockLine, SyncItem, SyncStock } from "../../services/syncs";
import { issueDetails } from "../validation";

/** A JSON media type: `application/json`, or one of its `+json` kinds, with any parameters. */
const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

const STOCK_REQUIRED = `body: is required: the stock, as JSON ({"items": [...]}) or as ${NDJSON}`;

/** The longest line of an NDJSON stock: an item's description is at most 64 KiB, its other fields far less. */
const MAX_LINE_BYTES = 256 * 1024;

/** An item as sent, checked on its own: a valid item, or its problems (each naming its field). */
function lineOf(at: { seq: number; line: number }, value: unknown): StockLine {
  const parsed = SyncItem.safeParse(value);
  if (parsed.success) return { ...at, item: parsed.data };
  const externalAdId = (value as { externalAdId?: unknown } | null)?.externalAdId;
  return {
    ...at,
    externalAdId: Number.isSafeInteger(externalAdId) ? (externalAdId as number) : null,
    problems: issueDetails(parsed.error, "item"),
  };
}

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

/** The next part of a body, or a refusal when nothing arrives for `seconds`: a stalled upload ends. */
async function nextPart(reader: ReadableStreamDefaultReader<string>, seconds: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          DomainError.of(
            "upload_stalled",
            `body: nothing arrived for ${seconds} s; the sync ended and nothing of it was applied, send the stock again`,
          ),
        ),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([reader.read(), stalled]);
  } catch (error) {
    await reader.cancel().catch(() => {});
    if (error instanceof DomainError) throw error;
    // The body's bytes could not be read as sent (compressed data that is not, text that is not UTF-8).
    throw DomainError.of("malformed_body", `body: could not be read as sent: ${String(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The lines of a body, read as they arrive: one item per non-empty line, numbered from 1 (`seq`), each
 * message naming the line as sent, blank ones counted (`line`).
 */
async function* ndjsonLines(body: ReadableStream<Uint8Array>, stallSeconds: number): AsyncGenerator<StockLine> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let seq = 0;
  let line = 0;
  const parse = (text: string): StockLine | undefined => {
    line += 1;
    if (text.trim() === "") return undefined;
    seq += 1;
    try {
      return lineOf({ seq, line }, JSON.parse(text));
    } catch {
      return {
        seq,
        line,
        externalAdId: null,
        problems: [detail("malformed_body", `line ${line}: is not a JSON object`)],
      };
    }
  };
  for (;;) {
    const { done, value } = await nextPart(reader, stallSeconds);
    if (done) break;
    buffered += value;
    let end = buffered.indexOf("\n");
    while (end >= 0) {
      const line = parse(buffered.slice(0, end));
      if (line) yield line;
      buffered = buffered.slice(end + 1);
      end = buffered.indexOf("\n");
    }
    if (buffered.length > MAX_LINE_BYTES)
      throw DomainError.of("body_too_large", `line ${line + 1}: must not exceed ${MAX_LINE_BYTES / 1024} KiB`);
  }
  const last = parse(buffered);
  if (last) yield last;
}

/** A JSON body's stock, validated whole (within the 1 MiB limit of every JSON body). */
async function jsonItems(c: Context<AppEnv>): Promise<unknown[]> {
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw DomainError.of("malformed_body", "body: malformed JSON");
  }
  const parsed = SyncStock.safeParse(value);
  if (!parsed.success) throw new DomainError(issueDetails(parsed.error, "body"));
  return parsed.data.items;
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
    const body = encoding ? raw.pipeThrough(new DecompressionStream(encoding)) : raw;
    const [forLines, forDigest] = body.tee();
    const digester = new crypto.DigestStream("SHA-256");
    const digest = forDigest.pipeTo(digester).then(() => digester.digest);
    // Read to the end or not, the digest's branch must not hold the body's chunks: it drains as they come.
    // A body that fails (compressed data that is not) is answered by the lines' reader, not here.
    digest.catch(() => {});
    digester.digest.catch(() => {});
    return {
      lines: ndjsonLines(forLines, Number(c.env.SYNC_UPLOAD_STALL_SECONDS) || DEFAULT_STALL_SECONDS),
      digest: async () => [...new Uint8Array(await digest)].map((b) => b.toString(16).padStart(2, "0")).join(""),
    };
  }
  if (!JSON_TYPE.test(contentType ?? ""))
    throw DomainError.of("unsupported_media_type", `body: Content-Type must be application/json or ${NDJSON}`);
  const items = await jsonItems(c);
  return {
    lines: (async function* () {
      for (const [at, value] of items.entries()) yield lineOf({ seq: at + 1, line: at + 1 }, value);
    })(),
    digest: async () => sha256Hex(JSON.stringify(items)),
  };
}
