-- Jobs, charges and listing references outlive their ad: `queue_items` and `ad_publications` lose their
-- foreign key to `ads` (deleting an ad does not unpublish it, and its open jobs still run or settle), and
-- a job keeps the marketplace listing it made or acted on (`remote_ad_id`, backfilled for the jobs a
-- publication still names). SQLite drops a foreign key only by rebuilding the table; nothing references
-- either table, so the rebuild needs no deferred checks.
CREATE TABLE `__new_ad_publications` (
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`pending` integer DEFAULT false NOT NULL,
	`pending_date` text,
	`processing` integer DEFAULT false NOT NULL,
	`processing_date` text,
	`error` integer DEFAULT false NOT NULL,
	`error_reason` text,
	`active` integer DEFAULT false NOT NULL,
	`online` integer DEFAULT false NOT NULL,
	`start_date` text,
	`close_date` text,
	`remote_ad_id` integer DEFAULT 0 NOT NULL,
	`client_result` integer DEFAULT false NOT NULL,
	`queue_result` integer DEFAULT false NOT NULL,
	`queue_item_id` integer,
	PRIMARY KEY(`ad_id`, `portal`)
);
--> statement-breakpoint
INSERT INTO `__new_ad_publications`("ad_id", "portal", "pending", "pending_date", "processing", "processing_date", "error", "error_reason", "active", "online", "start_date", "close_date", "remote_ad_id", "client_result", "queue_result", "queue_item_id") SELECT "ad_id", "portal", "pending", "pending_date", "processing", "processing_date", "error", "error_reason", "active", "online", "start_date", "close_date", "remote_ad_id", "client_result", "queue_result", "queue_item_id" FROM `ad_publications`;--> statement-breakpoint
DROP TABLE `ad_publications`;--> statement-breakpoint
ALTER TABLE `__new_ad_publications` RENAME TO `ad_publications`;--> statement-breakpoint
CREATE INDEX `ad_publications_active` ON `ad_publications` (`portal`,`active`);--> statement-breakpoint
CREATE TABLE `__new_queue_items` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`portal` text NOT NULL,
	`action` text NOT NULL,
	`feature` text,
	`images` integer DEFAULT true NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`reason` text,
	`nonce` text,
	`external_ref` text,
	`cost` integer DEFAULT 0 NOT NULL,
	`payer_id` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`retry_at` text,
	`rerun` integer DEFAULT false NOT NULL,
	`remote_ad_id` integer,
	`retry_of` integer,
	`request_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", (SELECT p.`remote_ad_id` FROM `ad_publications` p WHERE p.`ad_id` = `queue_items`.`ad_id` AND p.`portal` = `queue_items`.`portal` AND p.`queue_item_id` = `queue_items`.`id` AND `queue_items`.`status` = 'done' AND `queue_items`.`action` != 'unpublish'), "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items`;--> statement-breakpoint
DROP TABLE `queue_items`;--> statement-breakpoint
ALTER TABLE `__new_queue_items` RENAME TO `queue_items`;--> statement-breakpoint
CREATE INDEX `queue_items_ad` ON `queue_items` (`ad_id`,`portal`,`status`);--> statement-breakpoint
CREATE INDEX `queue_items_user` ON `queue_items` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `queue_items_waiting` ON `queue_items` (`status`,`retry_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `queue_items_open_intent` ON `queue_items` (`ad_id`,`portal`,`action`,coalesce(`feature`, '')) WHERE `status` IN ('pending', 'processing');