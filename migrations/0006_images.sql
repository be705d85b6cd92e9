CREATE TABLE `ad_images` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`job_id` integer NOT NULL,
	`sort_key` real NOT NULL,
	`original_key` text NOT NULL,
	`thumbnail_key` text NOT NULL,
	`content_type` text NOT NULL,
	`width` integer NOT NULL,
	`height` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `ad_images_job_id_unique` ON `ad_images` (`job_id`);--> statement-breakpoint
CREATE INDEX `ad_images_order` ON `ad_images` (`ad_id`,`sort_key`);--> statement-breakpoint
CREATE TABLE `image_jobs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`source_url` text DEFAULT '' NOT NULL,
	`source_path` text DEFAULT '' NOT NULL,
	`autoupdate` integer DEFAULT true NOT NULL,
	`processing` integer DEFAULT false NOT NULL,
	`done` integer DEFAULT false NOT NULL,
	`result` integer DEFAULT false NOT NULL,
	`reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `image_jobs_ad` ON `image_jobs` (`ad_id`,`done`);--> statement-breakpoint
CREATE INDEX `image_jobs_user` ON `image_jobs` (`user_id`,`ad_id`);