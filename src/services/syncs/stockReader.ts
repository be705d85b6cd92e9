// A stock's bytes read as they arrive, whoever sends them: a client's upload (POST /syncs/) or a feed's fetch.
import { DomainError, detail } from "../../lib/errors";
import { issueDetails } from "../../lib/issues";
import { SyncItem, SyncStock } from "./schemas";
import type { StockLine } from "./stockLines";

/** The longest line of an NDJSON stock: an item's description is at most 64 KiB, its other fields far less. */
export const MAX_LINE_BYTES = 256 * 1024;

/** An item as sent, checked on its own: a valid item, or its problems (each naming its field). */
export function stockLine(at: { seq: number; line: number }, value: unknown): StockLine {
  const parsed = SyncItem.safeParse(value);
  if (parsed.success) return { ...at, item: parsed.data };
  const externalAdId = (value as { externalAdId?: unknown } | null)?.externalAdId;
  return {
    ...at,
    externalAdId: Number.isSafeInteger(externalAdId) ? (externalAdId as number) : null,
    problems: issueDetails(parsed.error, "item"),
  };
}

/** The next part of a body, or a refusal when nothing arrives for `seconds`: a stalled body ends its sync. */
export async function nextPart<T>(reader: ReadableStreamDefaultReader<T>, seconds: number) {
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
 * message naming the line as sent, blank ones counted (`line`). A line that is no JSON is refused as an
 * item (`malformed: "refuse"`, an upload: the client sees it in the report) or ends the stock
 * (`"fail"`, a feed: a page that is no feed must not end the user's ads).
 */
export async function* ndjsonLines(
  body: ReadableStream<Uint8Array>,
  options: { stallSeconds: number; malformed: "refuse" | "fail" },
): AsyncGenerator<StockLine> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let seq = 0;
  let line = 0;
  const parse = (text: string): StockLine | undefined => {
    line += 1;
    if (text.trim() === "") return undefined;
    seq += 1;
    try {
      return stockLine({ seq, line }, JSON.parse(text));
    } catch {
      const problem = detail("malformed_body", `line ${line}: is not a JSON object`);
      if (options.malformed === "fail") throw new DomainError(problem);
      return { seq, line, externalAdId: null, problems: [problem] };
    }
  };
  for (;;) {
    const { done, value } = await nextPart(reader, options.stallSeconds);
    if (done) break;
    buffered += value;
    let end = buffered.indexOf("\n");
    while (end >= 0) {
      const parsed = parse(buffered.slice(0, end));
      if (parsed) yield parsed;
      buffered = buffered.slice(end + 1);
      end = buffered.indexOf("\n");
    }
    if (buffered.length > MAX_LINE_BYTES)
      throw DomainError.of("body_too_large", `line ${line + 1}: must not exceed ${MAX_LINE_BYTES / 1024} KiB`);
  }
  const last = parse(buffered);
  if (last) yield last;
}

/** Lowercase hex of a digest. */
const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * A body beside the SHA-256 of its bytes, taken as they pass (a `DigestStream` on a branch of the body):
 * known once the body was read to its end. The digest's branch drains as the chunks come, so it holds none.
 */
export function digestingBody(body: ReadableStream<Uint8Array>): {
  body: ReadableStream<Uint8Array>;
  digest: () => Promise<string>;
} {
  const [forReading, forDigest] = body.tee();
  const digester = new crypto.DigestStream("SHA-256");
  const digest = forDigest.pipeTo(digester).then(() => digester.digest);
  // A body that fails (compressed data that is not) is answered by its reader, not here.
  digest.catch(() => {});
  digester.digest.catch(() => {});
  return { body: forReading, digest: async () => hex(await digest) };
}

/** A JSON stock's `items` (`{items: [...]}`), or its problems naming the field. */
export function jsonStockItems(value: unknown): unknown[] {
  const parsed = SyncStock.safeParse(value);
  if (!parsed.success) throw new DomainError(issueDetails(parsed.error, "body"));
  return parsed.data.items;
}

/** A JSON stock's items as its lines, each checked on its own (an item's line is its place). */
export async function* itemLines(items: unknown[]): AsyncGenerator<StockLine> {
  for (const [at, value] of items.entries()) yield stockLine({ seq: at + 1, line: at + 1 }, value);
}
