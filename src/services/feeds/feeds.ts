// A user's feeds: registered, shown, changed, removed, and fetched now on request.
import { and, count, desc, eq, isNull } from "drizzle-orm";
import { namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { feeds } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { seal } from "../../lib/secretBox";
import { formatDateTime } from "../../lib/time";
import { clientIdOf, isInternal, isPartner, requireUser, seesUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { sendFeedFetches } from "./fetching";
import { nextRunAfter, scheduleOf } from "./schedule";
import type { CreateFeed, FeedSchedule, FeedView, UpdateFeed } from "./schemas";

export type FeedRow = typeof feeds.$inferSelect;

export const feedView = (row: FeedRow): FeedView => ({
  feedId: row.id,
  userId: row.userId,
  url: row.url,
  format: row.format,
  header: row.headerName ? { name: row.headerName } : null,
  schedule: scheduleOf(row),
  removal: row.removal,
  maxEndedPercent: row.maxEndedPercent,
  paused: row.paused,
  pausedReason: row.pausedReason,
  failures: row.failures,
  nextRunAt: formatDateTime(row.nextRunAt),
  queued: row.queuedAt !== null,
  lastFetch:
    row.lastFetchAt && row.lastOutcome
      ? {
          at: formatDateTime(row.lastFetchAt),
          outcome: row.lastOutcome,
          httpStatus: row.lastHttpStatus,
          bytes: row.lastBytes,
          items: row.lastItems,
          syncId: row.lastSyncId,
          failure: row.lastFailure,
        }
      : null,
  createdAt: formatDateTime(row.createdAt),
  updatedAt: formatDateTime(row.updatedAt),
});

/** The columns of a schedule. */
const scheduleColumns = (schedule: FeedSchedule) => ({
  every: schedule.every,
  hour: schedule.every === "daily" ? schedule.hour : 0,
  minute: schedule.minute,
});

/** `POST /feeds/`: a feed of the user, first fetched at its schedule's next time. */
export async function createFeed(ctx: ServiceContext, input: CreateFeed): Promise<FeedView> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const now = new Date();
  const row = await db
    .insert(feeds)
    .values({
      id: nextId(feeds, groupOfUser(input.userId)),
      clientId: clientIdOf(caller),
      internal: isInternal(caller),
      partner: isPartner(caller),
      userId: input.userId,
      url: input.url,
      format: input.format,
      headerName: input.header?.name ?? null,
      headerValue: input.header ? await seal(input.header.value, ctx.env) : null,
      ...scheduleColumns(input.schedule),
      removal: input.removal,
      maxEndedPercent: input.maxEndedPercent,
      paused: input.paused,
      mediaBase: ctx.mediaBase,
      nextRunAt: nextRunAfter(input.schedule, now).toISOString(),
    })
    .returning()
    .get();
  return feedView(row);
}

/** The feed, as its client (or an internal client) may see it. */
async function visibleFeed(ctx: ServiceContext, feedId: number): Promise<FeedRow> {
  const row = await ctx.db.select().from(feeds).where(eq(feeds.id, feedId)).get();
  if (!row || !(await seesUser(ctx.db, ctx.caller, row.userId)))
    throw DomainError.of("feed_not_found", `feedId: feed ${feedId} not found`);
  return row;
}

/** `GET /feeds/<feedId>`: the feed and its last fetch. */
export const getFeed = async (ctx: ServiceContext, feedId: number) => feedView(await visibleFeed(ctx, feedId));

/** `GET /feeds/?userId=`: the user's feeds, newest first. */
export async function listFeeds(ctx: ServiceContext, input: { userId: number; page: number; itemsPerPage: number }) {
  await requireUser(ctx.db, ctx.caller, input.userId);
  const where = eq(feeds.userId, input.userId);
  const { total, rows } = await namedBatch(ctx.db, {
    total: ctx.db.select({ n: count() }).from(feeds).where(where),
    rows: ctx.db
      .select()
      .from(feeds)
      .where(where)
      .orderBy(desc(feeds.id))
      .limit(input.itemsPerPage)
      .offset((input.page - 1) * input.itemsPerPage),
  });
  return {
    items: rows.map(feedView),
    totalItems: total[0]?.n ?? 0,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
}

/**
 * `PUT /feeds/<feedId>`: the fields given change; a new schedule sets the next fetch; `paused: false`
 * resumes a feed, its failures forgotten. A header without a value keeps the stored secret.
 */
export async function updateFeed(ctx: ServiceContext, input: UpdateFeed & { feedId: number }): Promise<FeedView> {
  const { feedId } = input;
  const row = await visibleFeed(ctx, feedId);
  if (input.userId !== undefined && input.userId !== row.userId)
    throw DomainError.of("not_updatable", `userId: must be the feed's user (${row.userId})`);
  if (input.header && input.header.value === undefined && !row.headerValue)
    throw DomainError.of("validation_failed", "header.value: is required: the feed has no header to keep");
  const headerValue =
    input.header === undefined
      ? row.headerValue
      : input.header === null
        ? null
        : input.header.value === undefined
          ? row.headerValue
          : await seal(input.header.value, ctx.env);
  const resumed = input.paused === false && row.paused;
  const updated = await ctx.db
    .update(feeds)
    .set({
      url: input.url ?? row.url,
      format: input.format ?? row.format,
      headerName: input.header === undefined ? row.headerName : (input.header?.name ?? null),
      headerValue,
      ...(input.schedule
        ? { ...scheduleColumns(input.schedule), nextRunAt: nextRunAfter(input.schedule, new Date()).toISOString() }
        : {}),
      removal: input.removal ?? row.removal,
      maxEndedPercent: input.maxEndedPercent ?? row.maxEndedPercent,
      paused: input.paused ?? row.paused,
      ...(resumed ? { pausedReason: null, failures: 0 } : {}),
      // Another URL or format is another body: the next fetch asks for it whole.
      ...(input.url !== undefined || input.format !== undefined
        ? { etag: null, lastModified: null, digest: null }
        : {}),
      updatedAt: new Date().toISOString(),
    })
    .where(eq(feeds.id, feedId))
    .returning()
    .get();
  return feedView(updated);
}

/** `DELETE /feeds/<feedId>`: the feed goes (a fetch under way finds it gone; its sync, if any, runs on). */
export async function deleteFeed(ctx: ServiceContext, feedId: number): Promise<FeedView> {
  const row = await visibleFeed(ctx, feedId);
  await ctx.db.delete(feeds).where(eq(feeds.id, feedId));
  return feedView(row);
}

/** `POST /feeds/<feedId>/run`: a fetch now, in the client's lanes (one waiting or under way at a time). */
export async function runFeedNow(ctx: ServiceContext, feedId: number): Promise<FeedView> {
  await visibleFeed(ctx, feedId);
  const claimed = await ctx.db
    .update(feeds)
    .set({ queuedAt: new Date().toISOString() })
    .where(and(eq(feeds.id, feedId), isNull(feeds.queuedAt)))
    .returning()
    .get();
  if (claimed) await sendFeedFetches(ctx.env, { feedIds: [feedId], requestId: ctx.requestId });
  return feedView(claimed ?? (await visibleFeed(ctx, feedId)));
}
