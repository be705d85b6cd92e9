import { and, eq, sql } from "drizzle-orm";
import { type Db, d1Statement, namedD1Batch } from "../../db/client";
import { groupOfAd, nextId } from "../../db/ids";
import { adImages, adUpdateRequests, imageJobs } from "../../db/schema";
import type { Env } from "../../env";
import { randomToken } from "../../lib/crypto";
import { log } from "../../lib/log";
import { deleteObjects, EXTENSIONS, mediaBaseOf, mediaUrl, sniffImageType } from "../../lib/media";
import { guardedFetch, mediaPathUrl, OutboundRefused, outboundPolicy } from "../../lib/outbound";
import { outboundCall } from "../../lib/outboundClock";
import { adWriteRevisions } from "../ads/access";
import { eventOf } from "../events/events";
import type { JobContext } from "../shared/context";
import { bumpRevisions } from "../shared/revisions";

/**
 * A download has `downloadMs` in all, from the request to its last byte, so a host that trickles its
 * body is cut off as surely as one that never answers (a client's share of the lane: src/jobs/clientLanes.ts).
 */
export const IMAGE_LIMITS = { downloadMs: 10_000 } as const;
const TOO_SLOW = `not downloaded within ${IMAGE_LIMITS.downloadMs / 1000} s`;
const MAX_REDIRECTS = 3;
/** Thumbnails fit in this box and are never more than half the original's size. */
const THUMBNAIL_BOX = 320;

class ImageRefused extends Error {}

type ImageType = keyof typeof EXTENSIONS;
const imageKey = (adId: number, kind: "original" | "thumbnail", type: ImageType) =>
  `images/${adId}/${randomToken(18)}-${kind}.${EXTENSIONS[type]}`;

/** The bytes behind a URL, through the outbound guard, refusing non-images and oversized files. */
const download = (env: Env, url: URL) => outboundCall(() => downloaded(env, url));

async function downloaded(env: Env, url: URL): Promise<{ bytes: Uint8Array; type: ImageType }> {
  const maxBytes = Number(env.IMAGE_MAX_BYTES);
  const deadline = Date.now() + IMAGE_LIMITS.downloadMs;
  const response = await guardedFetch(url, outboundPolicy(env), {
    timeoutMs: IMAGE_LIMITS.downloadMs,
    maxRedirects: MAX_REDIRECTS,
  });
  if (!response.ok || !response.body) throw new ImageRefused(`download failed with HTTP ${response.status}`);
  if (Number(response.headers.get("Content-Length") ?? 0) > maxBytes) {
    await response.body.cancel();
    throw new ImageRefused(`larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  const timeUp = deadlineOf(deadline);
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timeUp.late]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw new ImageRefused(`larger than ${maxBytes} bytes`);
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    timeUp.clear();
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const type = sniffImageType(bytes);
  if (!type) throw new ImageRefused("not a JPEG, PNG, WebP or GIF image");
  return { bytes, type };
}

/**
 * A promise refused with ImageRefused when the download's time runs out: one timer for the whole body,
 * raced against each read (a host that trickles its bytes makes hundreds of reads).
 */
function deadlineOf(deadline: number): { late: Promise<never>; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ImageRefused(TOO_SLOW)), Math.max(0, deadline - Date.now()));
  });
  // A refusal nobody awaits any more (the body ended first) is not an unhandled rejection.
  late.catch(() => {});
  return { late, clear: () => clearTimeout(timer) };
}

const stream = (bytes: Uint8Array) => new Blob([bytes]).stream();

/** Image work on the Images binding: dimensions, thumbnails and rotation (kept under a new key). */
export function imagesTransformer(images: ImagesBinding): {
  rotate(
    storage: R2Bucket,
    key: string,
    degrees: 90 | 180 | 270,
  ): Promise<{ key: string; width: number; height: number }>;
  thumbnail(bytes: Uint8Array, type: ImageType): Promise<Uint8Array>;
  info(bytes: Uint8Array): Promise<{ width: number; height: number }>;
} {
  return {
    async info(bytes) {
      const info = await images.info(stream(bytes));
      if (!("width" in info)) throw new ImageRefused("image without dimensions");
      return { width: info.width, height: info.height };
    },
    async thumbnail(bytes, type) {
      const { width, height } = await this.info(bytes);
      const scale = Math.min(THUMBNAIL_BOX / width, THUMBNAIL_BOX / height, 0.5);
      const result = await images
        .input(stream(bytes))
        .transform({
          width: Math.max(1, Math.floor(width * scale)),
          height: Math.max(1, Math.floor(height * scale)),
          fit: "scale-down",
        })
        .output({ format: type === "image/gif" ? "image/png" : type });
      return new Uint8Array(await result.response().arrayBuffer());
    },
    async rotate(storage, key, degrees) {
      const object = await storage.get(key);
      if (!object) throw new Error(`image object ${key} is missing`);
      const type = (object.httpMetadata?.contentType ?? "image/png") as ImageType;
      const outputType = type === "image/gif" ? "image/png" : type;
      const result = await images.input(object.body).transform({ rotate: degrees }).output({ format: outputType });
      const bytes = new Uint8Array(await result.response().arrayBuffer());
      const { width, height } = await this.info(bytes);
      const newKey = key.replace(
        /[^/]+$/,
        `${randomToken(18)}-${key.includes("-thumbnail.") ? "thumbnail" : "original"}.${EXTENSIONS[outputType]}`,
      );
      await storage.put(newKey, bytes, { httpMetadata: { contentType: outputType, cacheControl: IMMUTABLE } });
      return { key: newKey, width, height };
    },
  };
}

export const IMMUTABLE = "public, max-age=31536000, immutable";

/** Bytes that look like an image but cannot be decoded are refused, not retried. */
async function readable<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch {
    throw new ImageRefused("could not be read as an image");
  }
}

/** An image job ends failed with its reason, and reports `image.failed`; a job already finished stays as it was. */
export function failImageJob(db: Db, job: { id: number; userId: number; adId: number }, reason: string) {
  const open = and(eq(imageJobs.id, job.id), eq(imageJobs.done, false));
  return [
    eventOf(
      db,
      {
        type: "image.failed",
        userId: job.userId,
        adId: job.adId,
        data: sql`json_object('jobId', ${job.id}, 'reason', ${reason})`,
      },
      sql`EXISTS (SELECT 1 FROM image_jobs WHERE id = ${job.id} AND done = 0)`,
    ),
    db.update(imageJobs).set({ processing: false, done: true, result: false, reason }).where(open),
  ] as const;
}

/**
 * One image job: download, check, store original and thumbnail, and add the image after the ad's others
 * (ordered by job id, so in request order). Safe to run twice: a finished job is skipped, and the image
 * row is unique per job. A refused image marks the job failed with its reason; the ad's other images
 * are untouched. Answers the job's ad, and whether the stored image asked for updates of the ad's live
 * listings (the caller queues them, and sends what waited for the ad's images; images sit below publishing).
 */
export async function runImageJob(
  ctx: JobContext,
  input: { jobId: number },
): Promise<{ adId: number | undefined; updatesRequested: boolean }> {
  const { db, env, requestId } = ctx;
  const { jobId } = input;
  const job = await db.select().from(imageJobs).where(eq(imageJobs.id, jobId)).get();
  if (!job || job.done) return { adId: job?.adId, updatesRequested: false };
  const startedAt = Date.now();
  const outcome = (result: "done" | "error", reason?: string) =>
    log(result === "done" ? "info" : "warn", "job", {
      kind: "image",
      jobId,
      adId: job.adId,
      result,
      reason,
      durationMs: Date.now() - startedAt,
      requestId,
    });
  await db.update(imageJobs).set({ processing: true }).where(eq(imageJobs.id, jobId));
  const transformer = imagesTransformer(env.IMAGES);
  let stored: { originalKey: string; thumbnailKey: string } | null = null;
  try {
    const url = job.sourceUrl ? new URL(job.sourceUrl) : mediaPathUrl(job.sourcePath, env.MEDIA_ORIGIN);
    if (!url) throw new ImageRefused("path: must stay below the media origin");
    const { bytes, type } = await download(env, url);
    const { width, height, thumbnail } = await readable(async () => ({
      ...(await transformer.info(bytes)),
      thumbnail: await transformer.thumbnail(bytes, type),
    }));
    const thumbType = type === "image/gif" ? "image/png" : type;
    stored = {
      originalKey: imageKey(job.adId, "original", type),
      thumbnailKey: imageKey(job.adId, "thumbnail", thumbType),
    };
    await Promise.all([
      env.MEDIA.put(stored.originalKey, bytes, { httpMetadata: { contentType: type, cacheControl: IMMUTABLE } }),
      env.MEDIA.put(stored.thumbnailKey, thumbnail, {
        httpMetadata: { contentType: thumbType, cacheControl: IMMUTABLE },
      }),
    ]);
    // One transaction: the image only lands if the job was not cancelled meanwhile, and the job records it.
    const { inserted } = await namedD1Batch(env.shard.d1, {
      inserted: d1Statement(
        env.shard.d1,
        sql`INSERT INTO ad_images (id, ad_id, job_id, sort_key, original_key, thumbnail_key, content_type, width, height)
         SELECT ${nextId(adImages, groupOfAd(job.adId))}, ${job.adId}, ${job.id}, ${job.id}, ${stored.originalKey}, ${stored.thumbnailKey}, ${type}, ${width}, ${height}
         WHERE EXISTS (SELECT 1 FROM image_jobs WHERE id = ${job.id} AND done = 0)`,
      ),
      // Its event, while the job is still open (so a redelivered job reports nothing twice).
      event: d1Statement(
        env.shard.d1,
        eventOf(
          db,
          {
            type: "image.stored",
            userId: job.userId,
            adId: job.adId,
            data: sql`json_object('jobId', ${job.id}, 'url', ${mediaUrl(mediaBaseOf(env), stored.originalKey)})`,
          },
          sql`EXISTS (SELECT 1 FROM ad_images WHERE job_id = ${job.id}) AND EXISTS (SELECT 1 FROM image_jobs WHERE id = ${job.id} AND done = 0)`,
        ),
      ),
      job: env.shard.d1
        .prepare(
          `UPDATE image_jobs SET processing = 0, done = 1,
           result = EXISTS (SELECT 1 FROM ad_images WHERE job_id = ?1),
           reason = CASE WHEN EXISTS (SELECT 1 FROM ad_images WHERE job_id = ?1) THEN NULL ELSE coalesce(reason, 'cancelled') END
         WHERE id = ?1`,
        )
        .bind(job.id),
      updateRequests: d1Statement(
        env.shard.d1,
        sql`INSERT INTO ad_update_requests (id, ad_id, portal, reason)
         SELECT ${nextId(adUpdateRequests, groupOfAd(job.adId), sql`row_number() OVER ()`)}, ad_id, portal, 'images' FROM ad_publications
         WHERE ad_id = ${job.adId} AND active = 1 AND ${job.autoupdate ? 1 : 0} = 1 AND EXISTS (SELECT 1 FROM ad_images WHERE job_id = ${job.id})`,
      ),
      revisions: d1Statement(env.shard.d1, bumpRevisions(db, adWriteRevisions(job.userId))),
    });
    if (!inserted.meta.changes) await deleteObjects(env.MEDIA, [stored]);
    outcome(inserted.meta.changes ? "done" : "error", inserted.meta.changes ? undefined : "cancelled");
    return { adId: job.adId, updatesRequested: Boolean(inserted.meta.changes) && job.autoupdate };
  } catch (error) {
    if (stored) await deleteObjects(env.MEDIA, [stored]);
    const reason =
      error instanceof ImageRefused || error instanceof OutboundRefused
        ? error.message
        : error instanceof Error && error.name === "TimeoutError"
          ? TOO_SLOW
          : null;
    if (!reason) throw error;
    await db.batch(failImageJob(db, job, reason));
    outcome("error", reason);
    return { adId: job.adId, updatesRequested: false };
  }
}
