import { env } from "cloudflare:test";
import { call, eventually, expectEnvelope } from "./api";
import { createAd } from "./data";

/** The test origin the image fixtures are served from (test/fixtures/imageOrigin.ts). */
export const IMAGE_ORIGIN = "http://images.test";
/** An image of the fixture origin, as a request names it. */
export const source = (name: string) => ({ image: { url: `${IMAGE_ORIGIN}/${name}` } });

/** An image stored in R2 under its URL, as the Images binding reads it; null when none is stored. */
export async function imageInfo(url: string) {
  const object = await env.MEDIA.get(new URL(url).pathname.replace(/^\/media\//, ""));
  if (!object) return null;
  const info = await env.IMAGES.info(object.body);
  return {
    ...(info as { width: number; height: number; format: string }),
    contentType: object.httpMetadata?.contentType,
  };
}

/** One seller's images: waiting for its image jobs, and an ad of it with images stored. */
export function sellerImages(key: string, userId: number) {
  /** Waits until every image job of the ad is done (the queue consumer runs beside the tests). */
  async function settled(adId: number): Promise<any[]> {
    return eventually(async () => {
      const status = await call("GET", `/imagestatus/${userId}/${adId}`, { key });
      const done = status.body.data.length > 0 && status.body.data.every((job: { done: boolean }) => job.done);
      return done ? status.body.data : undefined;
    }, `the image jobs of ad ${adId}`);
  }

  async function adWithImages(...names: string[]) {
    const ad = await createAd(key, userId);
    const answer = await call("PUT", `/images/${ad.adId}`, { key, body: { images: names.map(source) } });
    expectEnvelope(answer, 200);
    await settled(ad.adId);
    return ad.adId as number;
  }

  return { settled, adWithImages };
}
export type SellerImages = ReturnType<typeof sellerImages>;
