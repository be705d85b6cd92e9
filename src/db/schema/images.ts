/** Stored images and image jobs. */
import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { ads } from "./ads";
import { AD_PARENT, byId, group, owners } from "./ownership";
import { createdAt } from "./shared";

/**
 * Images of an ad. Order is `sort_key` (new images take their job id, so they land in request order);
 * the spec's `counter` is the row number in that order, so counters are 1..n without gaps by design.
 */
export const adImages = sqliteTable(
  "ad_images",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    /** The ingestion job that made it; unique, so a redelivered job cannot add it twice. */
    jobId: integer("job_id").notNull().unique(),
    sortKey: real("sort_key").notNull(),
    originalKey: text("original_key").notNull(),
    thumbnailKey: text("thumbnail_key").notNull(),
    contentType: text("content_type").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("ad_images_order").on(t.adId, t.sortKey)],
);

/** One ingestion job per requested image: the spec's image status record. */
export const imageJobs = sqliteTable(
  "image_jobs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    userId: integer("user_id").notNull(),
    sourceUrl: text("source_url").notNull().default(""),
    sourcePath: text("source_path").notNull().default(""),
    autoupdate: integer("autoupdate", { mode: "boolean" }).notNull().default(true),
    processing: integer("processing", { mode: "boolean" }).notNull().default(false),
    done: integer("done", { mode: "boolean" }).notNull().default(false),
    result: integer("result", { mode: "boolean" }).notNull().default(false),
    reason: text("reason"),
    createdAt: createdAt(),
  },
  (t) => [index("image_jobs_ad").on(t.adId, t.done), index("image_jobs_user").on(t.userId, t.adId)],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const imagesOwners = owners([
  [adImages, group(byId("ad_images"), { parents: AD_PARENT })],
  [imageJobs, group(byId("image_jobs"), { parents: AD_PARENT })],
]);
