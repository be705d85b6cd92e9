import { and, count, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { type Db, namedBatch } from "../../db/client";
import { groupOfAd, nextId, withIds } from "../../db/ids";
import { inList } from "../../db/inList";
import { rowChunks } from "../../db/rowChunks";
import { adImages, adPublications, adUpdateRequests, imageJobs, userSettings } from "../../db/schema";
import { refusedByTrigger } from "../../db/triggers";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { deleteObjects, mediaUrl } from "../../lib/media";
import { formatDateTime } from "../../lib/time";
import { adWriteRevisions, imageObjectsOf, requireAd, visibleAds } from "../ads/access";
import { eventOf } from "../events/events";
import { clientIdOf, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { JobMessage } from "../shared/jobMessages";
import { bumpRevisions } from "../shared/revisions";
import { imagesTransformer } from "./processing";

type ImageRow = typeof adImages.$inferSelect;
export interface ImageView {
  counter: number;
  image: { url: string };
  thumbnail: { url: string };
}

export const toImageView = (row: ImageRow, counter: number, mediaBase: string): ImageView => ({
  counter,
  image: { url: mediaUrl(mediaBase, row.originalKey) },
  thumbnail: { url: mediaUrl(mediaBase, row.thumbnailKey) },
});

/** An ad's images in order: the first is the primary image, and an image's counter is its position, from 1. */
export function imagesQuery(db: Db, adId: number) {
  return db.select().from(adImages).where(eq(adImages.adId, adId)).orderBy(adImages.sortKey, adImages.id);
}

/** The ad's images in order, with their counters. */
async function orderedImages(db: Db, adId: number) {
  return (await imagesQuery(db, adId)).map((row, i) => ({ row, counter: i + 1 }));
}

/** The ad's images in order, with URLs under `mediaBase`. */
export async function listImages(db: Db, adId: number, mediaBase: string): Promise<ImageView[]> {
  return (await orderedImages(db, adId)).map(({ row, counter }) => toImageView(row, counter, mediaBase));
}

export async function getImages(ctx: ServiceContext, adId: number) {
  await requireAd(ctx.db, ctx.caller, adId);
  return { adId, images: await listImages(ctx.db, adId, ctx.mediaBase) };
}

/** Marks an update on every portal the ad is active on, when asked (autoupdate). */
const requestUpdates = (db: Db, adId: number) =>
  db.insert(adUpdateRequests).select(
    db
      .select({
        id: sql<number>`${nextId(adUpdateRequests, groupOfAd(adId), sql`row_number() OVER ()`)}`.as("id"),
        adId: adPublications.adId,
        portal: adPublications.portal,
        reason: sql<string>`'images'`.as("reason"),
        createdAt: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`.as("created_at"),
      })
      .from(adPublications)
      .where(and(eq(adPublications.adId, adId), eq(adPublications.active, true))),
  );

/** Images an ad holds: stored ones plus jobs still waiting. */
async function heldImages(db: Db, adId: number): Promise<number> {
  const {
    stored: [stored],
    waiting: [waiting],
  } = await namedBatch(db, {
    stored: db.select({ n: sql<number>`count(*)` }).from(adImages).where(eq(adImages.adId, adId)),
    waiting: db
      .select({ n: sql<number>`count(*)` })
      .from(imageJobs)
      .where(and(eq(imageJobs.adId, adId), eq(imageJobs.done, false))),
  });
  return (stored?.n ?? 0) + (waiting?.n ?? 0);
}

export interface ImageSource {
  url?: string | undefined;
  path?: string | undefined;
}

/**
 * POST (replace) and PUT (add) /images/<adId>: records one job per image, in request order, and queues
 * them. A request that would take the ad past maxImages is refused whole.
 */
export async function queueImages(
  ctx: ServiceContext,
  input: { adId: number; images: { image: ImageSource }[]; autoupdate: boolean; replace: boolean },
) {
  const { db } = ctx;
  const ad = await requireAd(db, ctx.caller, input.adId);
  const [settings, held] = await Promise.all([
    db.select({ maxImages: userSettings.maxImages }).from(userSettings).where(eq(userSettings.userId, ad.userId)),
    heldImages(db, ad.id),
  ]);
  const maxImages = settings[0]?.maxImages ?? 24;
  const kept = input.replace ? 0 : held;
  const refusal = (count: number) =>
    DomainError.of(
      "max_images_reached",
      `images: the ad may have at most ${maxImages} images (maxImages); it has ${count} and ${input.images.length} were sent`,
    );
  if (kept + input.images.length > maxImages) throw refusal(kept);
  const replaced = input.replace ? await orderedImages(db, ad.id) : [];
  const statements: BatchItem<"sqlite">[] = [bumpRevisions(db, adWriteRevisions(ad.userId), ctx.precondition)];
  if (input.replace) {
    // Replacing drops the current images and cancels jobs still waiting, so they cannot land later.
    statements.push(
      db.delete(adImages).where(eq(adImages.adId, ad.id)),
      // Each job still waiting reports `image.failed` as it is cancelled.
      eventOf(
        db,
        {
          type: "image.failed",
          userId: imageJobs.userId,
          adId: imageJobs.adId,
          data: sql`json_object('jobId', ${imageJobs.id}, 'reason', 'replaced by a later request')`,
        },
        and(eq(imageJobs.adId, ad.id), eq(imageJobs.done, false)),
        imageJobs,
      ),
      db
        .update(imageJobs)
        .set({ done: true, result: false, reason: "replaced by a later request" })
        .where(and(eq(imageJobs.adId, ad.id), eq(imageJobs.done, false))),
    );
  }
  const jobRows = input.images.map(({ image }) => ({
    adId: ad.id,
    userId: ad.userId,
    sourceUrl: image.url ?? "",
    sourcePath: image.path ?? "",
    autoupdate: input.autoupdate,
  }));
  const insertJobs = rowChunks(imageJobs, jobRows).map((rows) =>
    db
      .insert(imageJobs)
      .values(withIds(imageJobs, rows, groupOfAd(ad.id)))
      .returning({ id: imageJobs.id }),
  );
  let jobs: { id: number }[];
  try {
    // The trigger image_jobs_max_per_ad refuses the batch past maxImages, also under concurrent requests.
    jobs = (await namedBatch(db, { statements, jobs: insertJobs })).jobs.flat();
  } catch (error) {
    if (refusedByTrigger(error, "maxImages")) throw refusal(await heldImages(db, ad.id));
    throw error;
  }
  await deleteObjects(
    ctx.env.MEDIA,
    replaced.map(({ row }) => row),
  );
  try {
    const clientId = clientIdOf(ctx.caller);
    await ctx.env.IMAGE_JOBS.sendBatch(
      jobs.map((job) => ({
        body: { kind: "image", jobId: job.id, clientId, requestId: ctx.requestId } satisfies JobMessage,
      })),
    );
  } catch (error) {
    await db
      .update(imageJobs)
      .set({ done: true, result: false, reason: "could not be queued" })
      .where(
        inList(
          imageJobs.id,
          jobs.map((j) => j.id),
        ),
      );
    throw error;
  }
  return { adId: ad.id, images: await listImages(db, ad.id, ctx.mediaBase) };
}

async function changeAndRespond(
  { db, mediaBase, precondition }: ServiceContext,
  adId: number,
  userId: number,
  autoupdate: boolean,
  ...statements: Parameters<Db["batch"]>[0][number][]
) {
  await db.batch([
    bumpRevisions(db, adWriteRevisions(userId), precondition),
    ...statements,
    ...(autoupdate ? [requestUpdates(db, adId)] : []),
  ]);
  return listImages(db, adId, mediaBase);
}

function byCounter(images: { row: ImageRow; counter: number }[], counters: number[]) {
  const missing = counters.filter((c) => !images.some((i) => i.counter === c));
  if (missing.length > 0)
    throw DomainError.of("reference_not_found", ...missing.map((c) => `images: the ad has no image ${c}`));
  return counters.map((c) => (images.find((i) => i.counter === c) as { row: ImageRow }).row);
}

/** DELETE /images/<adId>: all images go. */
export async function deleteAllImages(ctx: ServiceContext, adId: number) {
  const { db } = ctx;
  const ad = await requireAd(db, ctx.caller, adId);
  const images = await orderedImages(db, ad.id);
  await changeAndRespond(ctx, ad.id, ad.userId, true, db.delete(adImages).where(eq(adImages.adId, ad.id)));
  await deleteObjects(
    ctx.env.MEDIA,
    images.map((i) => i.row),
  );
}

/** DELETE /images/: the given counters go; the rest close up from 1. */
export async function deleteImages(ctx: ServiceContext, input: { adId: number; images: number[] }) {
  const { db } = ctx;
  const ad = await requireAd(db, ctx.caller, input.adId);
  const rows = byCounter(await orderedImages(db, ad.id), input.images);
  const images = await changeAndRespond(
    ctx,
    ad.id,
    ad.userId,
    true,
    db.delete(adImages).where(
      inList(
        adImages.id,
        rows.map((r) => r.id),
      ),
    ),
  );
  await deleteObjects(ctx.env.MEDIA, rows);
  return { adId: ad.id, images };
}

/** DELETE /images/batch/: all images of the user's given ads. */
export async function deleteImagesOfAds(ctx: ServiceContext, input: { userId: number; adId: number[] }) {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const visible = await visibleAds(db, caller, input.adId);
  const missing = input.adId.filter((id) => visible.get(id)?.userId !== input.userId);
  if (missing.length > 0)
    throw DomainError.of("ad_not_found", ...missing.map((id) => `adId: ad ${id} not found for user ${input.userId}`));
  const objects = await imageObjectsOf(db, input.adId);
  await db.batch([
    bumpRevisions(db, adWriteRevisions(input.userId), ctx.precondition),
    db.delete(adImages).where(inList(adImages.adId, input.adId)),
    ...input.adId.map((adId) => requestUpdates(db, adId)),
  ]);
  await deleteObjects(ctx.env.MEDIA, objects);
}

/** POST /imageswitch/: two images trade places. */
export async function switchImages(ctx: ServiceContext, input: { adId: number; images: [number, number] }) {
  const { db } = ctx;
  const ad = await requireAd(db, ctx.caller, input.adId);
  const [first, second] = byCounter(await orderedImages(db, ad.id), input.images) as [ImageRow, ImageRow];
  return changeAndRespond(
    ctx,
    ad.id,
    ad.userId,
    true,
    db
      .update(adImages)
      .set({ sortKey: sql`CASE ${adImages.id} WHEN ${first.id} THEN ${second.sortKey} ELSE ${first.sortKey} END` })
      .where(inList(adImages.id, [first.id, second.id])),
  );
}

/** POST /imageshift/: the image at `from` moves to position `to`; the others keep their order. */
export async function shiftImage(ctx: ServiceContext, input: { adId: number; images: [number, number] }) {
  const { db } = ctx;
  const ad = await requireAd(db, ctx.caller, input.adId);
  const images = await orderedImages(db, ad.id);
  const [from, to] = input.images;
  const [moving] = byCounter(images, [from]) as [ImageRow];
  if (to < 1 || to > images.length)
    throw DomainError.of("validation_failed", `images: position ${to} is outside 1-${images.length}`);
  const others = images.filter((i) => i.row.id !== moving.id).map((i) => i.row);
  const before = others[to - 2];
  const after = others[to - 1];
  // A sort key between the new neighbours; the job ids of images still to come are always larger.
  const sortKey =
    before && after
      ? (before.sortKey + after.sortKey) / 2
      : after
        ? after.sortKey - 1
        : before
          ? before.sortKey + 0.5
          : moving.sortKey;
  return changeAndRespond(
    ctx,
    ad.id,
    ad.userId,
    true,
    db.update(adImages).set({ sortKey }).where(eq(adImages.id, moving.id)),
  );
}

/** POST /imagerotate/: turns the pixels of the originals and thumbnails clockwise. */
export async function rotateImages(
  ctx: ServiceContext,
  input: { adId: number; images: number[]; rotate: 90 | 180 | 270 },
) {
  const { db } = ctx;
  const storage = ctx.env.MEDIA;
  const transformer = imagesTransformer(ctx.env.IMAGES);
  const ad = await requireAd(db, ctx.caller, input.adId);
  const rows = byCounter(await orderedImages(db, ad.id), [...new Set(input.images)]);
  const rotated = await Promise.all(
    rows.map(async (row) => {
      const [original, thumbnail] = await Promise.all([
        transformer.rotate(storage, row.originalKey, input.rotate),
        transformer.rotate(storage, row.thumbnailKey, input.rotate),
      ]);
      return { row, original, thumbnail };
    }),
  );
  const images = await changeAndRespond(
    ctx,
    ad.id,
    ad.userId,
    true,
    ...rotated.map(({ row, original, thumbnail }) =>
      db
        .update(adImages)
        .set({ originalKey: original.key, thumbnailKey: thumbnail.key, width: original.width, height: original.height })
        .where(eq(adImages.id, row.id)),
    ),
  );
  await deleteObjects(
    storage,
    rows.map((r) => r),
  );
  return images;
}

// ---- image status ----

type JobRow = typeof imageJobs.$inferSelect;
export const toImageStatus = (job: JobRow) => ({
  jobId: job.id,
  adId: job.adId,
  images: [{ URL: job.sourceUrl, path: job.sourcePath }],
  created: formatDateTime(job.createdAt),
  processing: job.processing,
  done: job.done,
  result: job.result,
  reason: job.reason ?? "",
});

/** How many image jobs a page of `/imagestatus/` holds at most, and the POST forms' one page. */
export const IMAGE_STATUS_PAGE = 1000;

/** The image jobs of a user (of the given ads), oldest first, a page at a time, with their total. */
export async function imageStatusPage(
  ctx: ServiceContext,
  input: { userId: number; adId?: number[] | undefined; page: number; itemsPerPage: number },
): Promise<Page<ReturnType<typeof toImageStatus>>> {
  const { db } = ctx;
  await requireUser(db, ctx.caller, input.userId);
  const where = and(
    eq(imageJobs.userId, input.userId),
    input.adId?.length ? inList(imageJobs.adId, input.adId) : undefined,
  );
  const {
    total: [total],
    rows,
  } = await namedBatch(db, {
    total: db.select({ n: count() }).from(imageJobs).where(where),
    rows: db
      .select()
      .from(imageJobs)
      .where(where)
      .orderBy(imageJobs.id)
      .limit(input.itemsPerPage)
      .offset((input.page - 1) * input.itemsPerPage),
  });
  return {
    items: rows.map(toImageStatus),
    totalItems: total?.n ?? 0,
    page: input.page,
    itemsPerPage: input.itemsPerPage,
  };
}

/** The first IMAGE_STATUS_PAGE image jobs of a user (of the given ads): the POST forms' answer. */
export async function imageStatus(ctx: ServiceContext, input: { userId: number; adId?: number[] | undefined }) {
  return (await imageStatusPage(ctx, { ...input, page: 1, itemsPerPage: IMAGE_STATUS_PAGE })).items;
}
