import { and, asc, count, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { adTallies, folders } from "../../db/schema";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions, userWriteRevisions } from "../shared/revisions";

export interface FolderView {
  userId: number;
  folderId: number;
  description: string;
  /** Number of ads in the folder (list answers). */
  total?: number;
}

const toView = (row: typeof folders.$inferSelect): FolderView => ({
  userId: row.userId,
  folderId: row.id,
  description: row.description,
});

async function allFolders(db: Db, userId: number): Promise<FolderView[]> {
  return (await db.select().from(folders).where(eq(folders.userId, userId)).orderBy(asc(folders.id))).map(toView);
}

/**
 * The spec's `total` (default false: "return one complete list") asks for the whole list; without it the
 * answer is paged by `page`/`itemsPerPage`. Either way each folder carries its number of ads.
 */
export async function listFolders(
  ctx: ServiceContext,
  query: { userId: number; folderId?: number; total: boolean; page: number; itemsPerPage: number },
): Promise<Page<FolderView>> {
  const { db, caller } = ctx;
  await requireUser(db, caller, query.userId);
  const where = query.folderId
    ? and(eq(folders.userId, query.userId), eq(folders.id, query.folderId))
    : eq(folders.userId, query.userId);
  const pageRows = db.select().from(folders).where(where).orderBy(asc(folders.id));
  const {
    totalRow: [totalRow],
    rows,
    counts,
  } = await namedBatch(db, {
    totalRow: db.select({ n: count() }).from(folders).where(where),
    rows: query.total ? pageRows : pageRows.limit(query.itemsPerPage).offset((query.page - 1) * query.itemsPerPage),
    // The ads of each of the user's folders, summed from the user's tallies, in the same round trip.
    counts: db
      .select({ folderId: adTallies.folderId, n: sql<number>`sum(${adTallies.n})` })
      .from(adTallies)
      .where(eq(adTallies.userId, query.userId))
      .groupBy(adTallies.folderId),
  });
  if (query.folderId && rows.length === 0)
    throw DomainError.of("folder_not_found", `folderId: folder ${query.folderId} not found`);
  const byFolder = new Map(counts.map((c) => [c.folderId, c.n]));
  const totalItems = totalRow?.n ?? 0;
  return {
    items: rows.map((row) => ({ ...toView(row), total: byFolder.get(row.id) ?? 0 })),
    totalItems,
    page: query.total ? 1 : query.page,
    itemsPerPage: query.total ? Math.max(totalItems, 1) : query.itemsPerPage,
  };
}

export async function createFolder(ctx: ServiceContext, input: { userId: number; description: string }) {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const { row } = await namedBatch(db, {
    row: db
      .insert(folders)
      .values({ ...input, id: nextId(folders, groupOfUser(input.userId)) })
      .returning(),
    revisions: bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  });
  return row.map(toView);
}

async function requireFolder(db: Db, userId: number, folderId: number): Promise<void> {
  const row = await db
    .select({ id: folders.id })
    .from(folders)
    .where(and(eq(folders.userId, userId), eq(folders.id, folderId)))
    .get();
  if (!row) throw DomainError.of("folder_not_found", `folderId: folder ${folderId} not found`);
}

export async function updateFolder(
  ctx: ServiceContext,
  input: { userId: number; folderId: number; description: string },
): Promise<FolderView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await requireFolder(db, input.userId, input.folderId);
  await db.batch([
    db.update(folders).set({ description: input.description }).where(eq(folders.id, input.folderId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return allFolders(db, input.userId);
}

/** Removes a folder; its ads stay, outside any folder. */
export async function deleteFolder(
  ctx: ServiceContext,
  input: { userId: number; folderId: number },
): Promise<FolderView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await requireFolder(db, input.userId, input.folderId);
  await db.batch([
    db.delete(folders).where(eq(folders.id, input.folderId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return allFolders(db, input.userId);
}
