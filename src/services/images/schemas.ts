import { z } from "@hono/zod-openapi";
import { acrossFields, id, rowId, takingResponse } from "../../lib/fields";
import { mediaPathUrl } from "../../lib/outbound";

/** The shapes of images and image jobs: one zod schema each, for validation, types and the OpenAPI document. */

export const Image = z
  .object({
    counter: z.number().int().openapi({ description: "Position, from 1" }),
    image: z.object({ url: z.string() }),
    thumbnail: z.object({ url: z.string() }),
  })
  .openapi("Image");

export const ImageSource = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/, error: "must be an http or https URL" })
      .max(2048)
      .optional(),
    path: z
      .string()
      .min(1)
      .max(1024)
      .refine((p) => mediaPathUrl(p, "https://media-origin.invalid/") !== null, {
        error: "must stay below the media origin: no . or .. segments, backslashes, schemes or hosts",
      })
      .optional()
      .openapi({
        description:
          "Resolved against the configured media origin (MEDIA_ORIGIN), and staying below it: no `.` or `..` segments, backslashes, control characters, schemes or hosts, encoded or not",
      }),
  })
  .refine((s) => (s.url === undefined) !== (s.path === undefined), { error: "give either url or path" })
  .openapi({
    description: acrossFields("Exactly one of `url` and `path`"),
    example: { url: "https://www.garagedevries.nl/fotos/vespa-voorkant.jpg" },
  });

export const ImagesRequest = z
  .object({
    adId: id().optional().openapi({ description: "Must match the path when given" }),
    images: z
      .array(takingResponse(z.object({ image: ImageSource }), Image))
      .min(1)
      .max(100),
    autoupdate: z.boolean().default(true).openapi({ description: "Push the new images to the portals the ad is on" }),
  })
  .openapi("ImagesRequest");

const counters = (min: number, max: number) => z.array(z.number().int().min(1)).min(min).max(max);

/** One ad or several; always a list once read. */
const adIds = z
  .union([id(), z.array(id()).max(1000)])
  .optional()
  .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]));

export const ImageStatusRequest = z.object({ userId: id(), adId: adIds }).openapi("ImageStatusRequest");

/** The path forms of POST /imagestatus/: the user (and one ad) in the path; the body may name them too. */
export const ImageStatusOfPathRequest = z
  .object({ userId: id().optional().openapi({ description: "Must match the path when given" }), adId: adIds })
  .openapi("ImageStatusOfPathRequest");

export const DeleteImagesBatch = z
  .object({ userId: id(), adId: z.array(id()).min(1).max(100) })
  .openapi("DeleteImagesBatch");
export const DeleteImages = z.object({ adId: id(), images: counters(1, 100) }).openapi("DeleteImages");
/** Two counters: the images to switch, or the image to move and where to. */
const counterPair = z.object({
  adId: id(),
  // Exactly two: the document's tuple says so with its item counts (a generated client sends two).
  images: z.tuple([z.number().int().min(1), z.number().int().min(1)]).openapi({ minItems: 2, maxItems: 2 }),
});
export const SwitchImages = counterPair.openapi("SwitchImages");
export const ShiftImage = counterPair.openapi("ShiftImage");
export const RotateImages = z
  .object({ adId: id(), images: counters(1, 100), rotate: z.union([z.literal(90), z.literal(180), z.literal(270)]) })
  .openapi("RotateImages");

/** The images' and image jobs' response shapes. */
export const AdImages = z.object({ adId: rowId(), images: z.array(Image) }).openapi("AdImages");
export const ImageStatus = z
  .object({
    jobId: rowId(),
    adId: rowId(),
    images: z
      .array(z.object({ URL: z.string(), path: z.string() }))
      .openapi({ description: "The image source; one is empty" }),
    created: z.string(),
    processing: z.boolean(),
    done: z.boolean(),
    result: z.boolean(),
    reason: z.string().openapi({ description: "Why a done job failed; empty otherwise" }),
  })
  .openapi("ImageStatus");
