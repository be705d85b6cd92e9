/**
 * The archive's objects as pages are read from them. Each row is written under each of its owners' folders
 * (`client-<id>/`, and `user-<id>/` when it has a user) of its group's month and kind, in objects named by
 * their first and last id and their number of rows: `<first>-<last>-<rows>.ndjson`. So a page is found by
 * listing names, never by reading the month: the objects before it are counted by their names, and only the
 * objects it covers are read. Objects whose id ranges overlap hold rows a run that died wrote twice; those
 * are read to count each row once.
 */
import type { Page } from "../../lib/envelope";

/** Whose rows a folder holds: a client's (all its users' and its own) or one user's. */
export type ArchiveOwner = { kind: "client" | "user"; id: number };

/** A line of an archive object, as `writeArchive` writes it. */
export type ArchiveLine = { id: number; clientId: number | null; userId: number | null; row: Record<string, unknown> };

export const ownerFolder = (folder: string, owner: ArchiveOwner) => `${folder}${owner.kind}-${owner.id}/`;

/** The object of an owner's lines: named by their first and last id and their count. */
export function archiveObject(folder: string, owner: ArchiveOwner, lines: ArchiveLine[]) {
  const sorted = [...lines].sort((a, b) => a.id - b.id);
  const first = sorted[0]?.id ?? 0;
  const last = sorted.at(-1)?.id ?? 0;
  return {
    key: `${ownerFolder(folder, owner)}${first}-${last}-${sorted.length}.ndjson`,
    body: sorted.map(({ id, clientId, userId, row }) => `${JSON.stringify({ id, clientId, userId, row })}\n`).join(""),
  };
}

const OBJECT_NAME = /(\d+)-(\d+)-(\d+)\.ndjson$/;

interface Piece {
  key: string;
  first: number;
  last: number;
  rows: number;
}

/** Objects whose id ranges overlap, in id order; a run of one object is counted by its name. */
interface Run {
  pieces: Piece[];
  rows: number;
  /** The run's rows, once read (a run of several is read to count them once each). */
  read?: ArchiveLine[];
}

async function keysUnder(bucket: R2Bucket, prefix: string, delimiter?: string): Promise<string[]> {
  const keys: string[] = [];
  for (let cursor: string | undefined, listing: R2Objects | undefined; !listing || listing.truncated; ) {
    listing = await bucket.list({ prefix, ...(delimiter ? { delimiter } : {}), ...(cursor ? { cursor } : {}) });
    keys.push(...listing.objects.map((object) => object.key));
    cursor = listing.truncated ? listing.cursor : undefined;
  }
  return keys;
}

/** The lines of objects, each id once, in id order. */
async function linesOf(bucket: R2Bucket, keys: string[]): Promise<ArchiveLine[]> {
  const byId = new Map<number, ArchiveLine>();
  for (const key of keys) {
    const text = (await (await bucket.get(key))?.text()) ?? "";
    for (const line of text.split("\n"))
      if (line) {
        const parsed = JSON.parse(line) as ArchiveLine;
        byId.set(parsed.id, parsed);
      }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function runsOf(keys: string[]): Run[] {
  const pieces = keys
    .flatMap((key) => {
      const [, first, last, rows] = OBJECT_NAME.exec(key) ?? [];
      return first ? [{ key, first: Number(first), last: Number(last), rows: Number(rows) }] : [];
    })
    .sort((a, b) => a.first - b.first || a.last - b.last);
  const runs: Run[] = [];
  let reach = -1;
  for (const piece of pieces) {
    const run = runs.at(-1);
    if (run && piece.first <= reach) {
      run.pieces.push(piece);
      run.rows += piece.rows;
    } else runs.push({ pieces: [piece], rows: piece.rows });
    reach = Math.max(reach, piece.last);
  }
  return runs;
}

/**
 * One page of an owner's rows of a month's kind, oldest first, and how many there are: the objects'
 * names listed, the objects the page covers read (and runs of overlapping objects, to count them). Objects
 * an earlier layout wrote straight into the kind's folder (every owner's rows together) are read whole
 * and filtered, as they always were.
 */
export async function archivePage(
  bucket: R2Bucket,
  input: { folder: string; owner: ArchiveOwner; page: number; itemsPerPage: number },
): Promise<Page<Record<string, unknown>>> {
  const { folder, owner, page, itemsPerPage } = input;
  const runs = runsOf(await keysUnder(bucket, ownerFolder(folder, owner)));
  const earlier = await keysUnder(bucket, folder, "/");
  if (earlier.length > 0) {
    const mine = (line: ArchiveLine) => (owner.kind === "client" ? line.clientId : line.userId) === owner.id;
    const all = await linesOf(bucket, [...earlier, ...runs.flatMap((run) => run.pieces.map((piece) => piece.key))]);
    runs.splice(0, runs.length, { pieces: [], rows: 0, read: all.filter(mine) });
  }
  for (const run of runs)
    if (run.pieces.length > 1) {
      run.read = await linesOf(
        bucket,
        run.pieces.map((piece) => piece.key),
      );
      run.rows = run.read.length;
    } else if (run.read) run.rows = run.read.length;
  const start = (page - 1) * itemsPerPage;
  const end = start + itemsPerPage;
  const items: Record<string, unknown>[] = [];
  let offset = 0;
  for (const run of runs) {
    if (offset >= end) break;
    if (offset + run.rows > start) {
      const lines =
        run.read ??
        (await linesOf(
          bucket,
          run.pieces.map((piece) => piece.key),
        ));
      items.push(...lines.slice(Math.max(0, start - offset), end - offset).map((line) => line.row));
    }
    offset += run.rows;
  }
  return { items, totalItems: runs.reduce((sum, run) => sum + run.rows, 0), page, itemsPerPage };
}
