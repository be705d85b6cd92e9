/**
 * The public base of image URLs: the deployment's MEDIA_BASE_URL; where none is configured (local
 * development), the origin of the request being served, so a call on 127.0.0.1 or on another `--port`
 * gets URLs it can open. Work outside a request (queue, cron) then uses LOCAL_MEDIA_BASE, which
 * `npm run dev` sets to the server's own address, or root-relative URLs.
 */
export function mediaBaseOf(
  env: { MEDIA_BASE_URL?: string; LOCAL_MEDIA_BASE?: string },
  requestOrigin?: string,
): string {
  const withSlash = (base: string) => (base.endsWith("/") ? base : `${base}/`);
  if (env.MEDIA_BASE_URL) return withSlash(env.MEDIA_BASE_URL);
  if (requestOrigin) return `${requestOrigin}/media/`;
  return env.LOCAL_MEDIA_BASE ? withSlash(env.LOCAL_MEDIA_BASE) : "/media/";
}

export const mediaUrl = (mediaBase: string, key: string) => `${mediaBase}${key}`;

/** Magic numbers of the image formats the service accepts. */
export function sniffImageType(bytes: Uint8Array): "image/jpeg" | "image/png" | "image/gif" | "image/webp" | null {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes[8] === 0x57 &&
    bytes[9] === 0x45 &&
    bytes[10] === 0x42 &&
    bytes[11] === 0x50
  ) {
    return "image/webp";
  }
  return null;
}

export const EXTENSIONS = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
} as const;

/** Removes the R2 objects of image rows (after their rows are gone). */
export async function deleteObjects(storage: R2Bucket, rows: { originalKey: string; thumbnailKey: string }[]) {
  const keys = rows.flatMap((r) => [r.originalKey, r.thumbnailKey]);
  for (let i = 0; i < keys.length; i += 1000) await storage.delete(keys.slice(i, i + 1000));
}
