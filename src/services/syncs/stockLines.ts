// A stock's lines as they arrive: in chunks, each externalAdId once, stored with each item's hash.
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { itemHash } from "./plan";
import { SYNC_MAX_ITEMS, type SyncItem } from "./schemas";
import { CHUNK_ITEMS, type StoredLine } from "./stockStore";

/**
 * One line of a stock as the route read it: a valid item, or the problems of one that is not. `seq` is the
 * item's place in the stock (blank lines are no items), `line` where it was sent (what messages name).
 */
export type StockLine =
  | { seq: number; line: number; item: SyncItem; problems?: undefined }
  | { seq: number; line: number; item?: undefined; externalAdId: number | null; problems: ErrorDetail[] };

/**
 * A stock as it arrives: its lines, read as they come (never held whole), and the SHA-256 of its bytes,
 * known once the last line is read (an Idempotency-Key's repeat must send the same stock).
 */
export interface Stock {
  lines: AsyncIterable<StockLine>;
  digest: () => Promise<string>;
}

/** A stock's lines in chunks, with every line past SYNC_MAX_ITEMS refused as a whole stock too big. */
export async function* chunksOf(lines: AsyncIterable<StockLine>): AsyncGenerator<StockLine[]> {
  let chunk: StockLine[] = [];
  for await (const line of lines) {
    if (line.seq > SYNC_MAX_ITEMS)
      throw DomainError.of("body_too_large", `items: a sync takes at most ${SYNC_MAX_ITEMS} items; split the stock`);
    chunk.push(line);
    if (chunk.length === CHUNK_ITEMS) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/** A line whose externalAdId an earlier line of the stock has: refused, naming the first's line. */
export function withoutRepeats(chunk: StockLine[], seen: Map<number, number>): StockLine[] {
  return chunk.map((line) => {
    if (!line.item) return line;
    const first = seen.get(line.item.externalAdId);
    if (first === undefined) {
      seen.set(line.item.externalAdId, line.line);
      return line;
    }
    return {
      seq: line.seq,
      line: line.line,
      externalAdId: line.item.externalAdId,
      problems: [
        detail("validation_failed", `externalAdId: ${line.item.externalAdId} is also the item on line ${first}`),
      ],
    };
  });
}

/** A chunk of a stock's lines as stored: each valid item with its hash, each refused one with its problems. */
export const storedLines = (lines: StockLine[]): Promise<StoredLine[]> =>
  Promise.all(
    lines.map(async (line) =>
      line.item
        ? { seq: line.seq, externalAdId: line.item.externalAdId, item: line.item, hash: await itemHash(line.item) }
        : { seq: line.seq, externalAdId: line.externalAdId, problems: line.problems },
    ),
  );
