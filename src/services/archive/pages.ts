/**
 * The archive's objects as pages are read from them. Each run of the archive writes, per group, month and
 * kind, one object per client of its rows, in the client's folder (`client-<id>/`), named by its first and
 * last id and its number of rows (`<first>-<last>-<rows>.ndjson`), with how many rows each user has in it
 * in its metadata (`users`), and adds its name to the folder's index (`index.json`, a list of names). So a
 * page is found from names, never by reading the month: a client's page from the index, a user's from the
 * folder's listing with metadata; the objects before it are counted, and only those it covers are read. A
 * run costs an object per client, not per row or user. Objects whose id ranges overlap hold rows a run that
 * died wrote twice; those are read to count each row once.
 */
import type { Page } from "../../lib/envelope";

/** Whose rows a page holds: a client's (its users' and its own), or one user's of that client. */
export type ArchiveOwner = { clientId: number; userId?: number | undefined };

/** A line of an archive object, as `writeArchive` writes it. */
export type ArchiveLine = { id: number; clientId: number | null; userId: number | null; row: Record<string, unknown> };

const clientFolder = (folder: string, clientId: number) => `${folder}client-${clientId}/`;

/** The largest `users` metadata kept; an object with more users says `many`, and a user's page reads it to count. */
const USERS_METADATA_BYTES = 1_800;

/** The object of a client's lines: named by their first and last id and their count, its users' counts in its metadata. */
export function archiveObject(folder: string, clientId: number, lines: ArchiveLine[]) {
  const sorted = [...lines].sort((a, b) => a.id - b.id);
  const users: Record<string, number> = {};
  for (const line of sorted) if (line.userId !== null) users[line.userId] = (users[line.userId] ?? 0) + 1;
  const counted = JSON.stringify(users);
  return {
    key: `${clientFolder(folder, clientId)}${sorted[0]?.id ?? 0}-${sorted.at(-1)?.id ?? 0}-${sorted.length}.ndjson`,
    body: sorted
      .map(({ id, clientId: client, userId, row }) => `${JSON.stringify({ id, clientId: client, userId, row })}\n`)
      .join(""),
    users: counted.length <= USERS_METADATA_BYTES ? counted : "many",
  };
}

const OBJECT_NAME = /(\d+)-(\d+)-(\d+)\.ndjson$/;

const indexKey = (folder: string, clientId: number) => `${clientFolder(folder, clientId)}index.json`;

/**
 * Adds an object's name to its client folder's index. The index is written after the object and before the
 * run deletes its rows from D1: a run that dies first leaves an object no page reads, and its rows in D1 to
 * be written again. A conditional put (on the index's etag) keeps a concurrent writer's names (a group's
 * folder has one writer but for a move's switch).
 */
export async function indexObject(bucket: R2Bucket, folder: string, clientId: number, key: string): Promise<void> {
  const name = key.slice(clientFolder(folder, clientId).length);
  for (;;) {
    const current = await bucket.get(indexKey(folder, clientId));
    const names = current ? ((await current.json()) as string[]) : [];
    if (names.includes(name)) return;
    const written = await bucket.put(
      indexKey(folder, clientId),
      JSON.stringify([...names, name]),
      current ? { onlyIf: { etagMatches: current.etag } } : {},
    );
    if (written) return;
  }
}

interface Piece {
  key: string;
  first: number;
  last: number;
  /** The owner's rows in it; undefined when only reading it tells (a user of an object with many). */
  rows: number | undefined;
}

/** Objects whose id ranges overlap, in id order; one object alone is counted from its listing. */
interface Run {
  pieces: Piece[];
  rows: number;
  /** The run's lines of the owner, once read. */
  read?: ArchiveLine[];
}

/** The objects under `prefix` (with their metadata when `users` are counted from it). */
async function listed(
  bucket: R2Bucket,
  prefix: string,
  options: { delimiter?: string; users?: boolean } = {},
): Promise<R2Object[]> {
  const { delimiter, users } = options;
  const objects: R2Object[] = [];
  for (let cursor: string | undefined, listing: R2Objects | undefined; !listing || listing.truncated; ) {
    listing = await bucket.list({
      prefix,
      ...(users ? { include: ["customMetadata"] as ("customMetadata" | "httpMetadata")[] } : {}),
      ...(delimiter ? { delimiter } : {}),
      ...(cursor ? { cursor } : {}),
    });
    objects.push(...listing.objects);
    cursor = listing.truncated ? listing.cursor : undefined;
  }
  return objects;
}

/** A client folder's objects as its index names them. */
async function indexed(bucket: R2Bucket, folder: string, clientId: number): Promise<Pick<R2Object, "key">[]> {
  const index = await bucket.get(indexKey(folder, clientId));
  const names = index ? ((await index.json()) as string[]) : [];
  return names.map((name) => ({ key: `${clientFolder(folder, clientId)}${name}` }));
}

/** The owner's lines of objects, each id once, in id order. */
async function linesOf(bucket: R2Bucket, keys: string[], owner: ArchiveOwner): Promise<ArchiveLine[]> {
  const byId = new Map<number, ArchiveLine>();
  for (const key of keys) {
    const text = (await (await bucket.get(key))?.text()) ?? "";
    for (const line of text.split("\n"))
      if (line) {
        const parsed = JSON.parse(line) as ArchiveLine;
        const mine = owner.userId === undefined ? parsed.clientId === owner.clientId : parsed.userId === owner.userId;
        if (mine) byId.set(parsed.id, parsed);
      }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function piecesOf(objects: Pick<R2Object, "key" | "customMetadata">[], owner: ArchiveOwner): Piece[] {
  return objects
    .flatMap((object) => {
      const [, first, last, rows] = OBJECT_NAME.exec(object.key) ?? [];
      if (!first) return [];
      const users = object.customMetadata?.users;
      const ofUser =
        owner.userId === undefined
          ? Number(rows)
          : users === undefined || users === "many"
            ? undefined
            : ((JSON.parse(users) as Record<string, number>)[owner.userId] ?? 0);
      return ofUser === 0 ? [] : [{ key: object.key, first: Number(first), last: Number(last), rows: ofUser }];
    })
    .sort((a, b) => a.first - b.first || a.last - b.last);
}

/** A run read whole: the owner's lines of its objects, each once, counted. */
async function readRun(bucket: R2Bucket, pieces: Pick<Piece, "key">[], owner: ArchiveOwner): Promise<Run> {
  const read = await linesOf(
    bucket,
    pieces.map((piece) => piece.key),
    owner,
  );
  return { pieces: [], rows: read.length, read };
}

/** The pieces in runs of overlapping id ranges; a run's rows known from the listing when it is one counted object. */
async function runsOf(bucket: R2Bucket, pieces: Piece[], owner: ArchiveOwner): Promise<Run[]> {
  const runs: Piece[][] = [];
  let reach = -1;
  for (const piece of pieces) {
    const run = runs.at(-1);
    if (run && piece.first <= reach) run.push(piece);
    else runs.push([piece]);
    reach = Math.max(reach, piece.last);
  }
  return Promise.all(
    runs.map(async (inRun) => {
      const [only] = inRun;
      if (inRun.length === 1 && only?.rows !== undefined) return { pieces: inRun, rows: only.rows };
      return readRun(bucket, inRun, owner);
    }),
  );
}

/**
 * One page of an owner's rows of a month's kind, oldest first, and how many there are: the client's objects
 * listed, the objects the page covers read. Objects an earlier layout wrote straight into the kind's folder
 * (every client's rows together) are read whole and filtered, as they always were.
 */
export async function archivePage(
  bucket: R2Bucket,
  input: { folder: string; owner: ArchiveOwner; page: number; itemsPerPage: number },
): Promise<Page<Record<string, unknown>>> {
  const { folder, owner, page, itemsPerPage } = input;
  const ofClient =
    owner.userId === undefined
      ? await indexed(bucket, folder, owner.clientId)
      : await listed(bucket, clientFolder(folder, owner.clientId), { users: true });
  const earlier = await listed(bucket, folder, { delimiter: "/" });
  const runs =
    earlier.length > 0
      ? [await readRun(bucket, [...earlier, ...ofClient], owner)]
      : await runsOf(bucket, piecesOf(ofClient, owner), owner);
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
          owner,
        ));
      items.push(...lines.slice(Math.max(0, start - offset), end - offset).map((line) => line.row));
    }
    offset += run.rows;
  }
  return { items, totalItems: runs.reduce((sum, run) => sum + run.rows, 0), page, itemsPerPage };
}
