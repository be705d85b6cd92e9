CREATE TABLE `syncs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`client_id` integer NOT NULL,
	`internal` integer DEFAULT false NOT NULL,
	`partner` integer DEFAULT false NOT NULL,
	`user_id` integer NOT NULL,
	`state` text DEFAULT 'receiving' NOT NULL,
	`phase` text DEFAULT 'items' NOT NULL,
	`removal` text DEFAULT 'delete' NOT NULL,
	`max_ended_percent` integer NOT NULL,
	`idempotency_key` text,
	`digest` text,
	`media_base` text DEFAULT '' NOT NULL,
	`items` integer DEFAULT 0 NOT NULL,
	`cursor` integer DEFAULT 0 NOT NULL,
	`end_scan` integer DEFAULT 0 NOT NULL,
	`end_chunks` integer DEFAULT 0 NOT NULL,
	`created` integer DEFAULT 0 NOT NULL,
	`updated` integer DEFAULT 0 NOT NULL,
	`unchanged` integer DEFAULT 0 NOT NULL,
	`ended` integer DEFAULT 0 NOT NULL,
	`refused` integer DEFAULT 0 NOT NULL,
	`charged` integer DEFAULT 0 NOT NULL,
	`reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`finished_at` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `syncs_user_idx` ON `syncs` (`user_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `syncs_idempotency_key` ON `syncs` (`client_id`,`idempotency_key`) WHERE idempotency_key IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `syncs_one_running` ON `syncs` (`user_id`) WHERE state IN ('receiving', 'running');--> statement-breakpoint
ALTER TABLE `ads` ADD `sync_hash` text;--> statement-breakpoint
ALTER TABLE `ads` ADD `synced_at` text;--> statement-breakpoint
CREATE INDEX `ads_user_external_idx` ON `ads` (`user_id`,`external_ad_id`);