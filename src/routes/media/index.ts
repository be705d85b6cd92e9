import { Hono } from "hono";
import type { AppEnv } from "../../env";
import { DomainError } from "../../lib/errors";

/**
 * Public image files: `/media/<key>`. Keys hold 18 random bytes, so they cannot be guessed; a rotated
 * image gets a new key, so answers can be cached for good.
 */
export const mediaRouter = new Hono<AppEnv>().get("/media/:key{images/.+}", async (c) => {
  const object = await c.env.MEDIA.get(c.req.param("key"));
  if (!object) throw DomainError.of("image_not_found", "image not found");
  const headers = new Headers();
  object.writeHttpMetadata(headers);
  headers.set("ETag", object.httpEtag);
  headers.set("Content-Length", String(object.size));
  return new Response(object.body, { headers });
});
