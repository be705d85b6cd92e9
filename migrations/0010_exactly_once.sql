CREATE TABLE `idempotency_keys` (
	`client_id` integer NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`locked_until` text,
	`status` integer,
	`headers` text,
	`body` text,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`client_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expiry` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
ALTER TABLE `ad_publications` ADD `queue_item_id` integer;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `nonce` text;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `external_ref` text;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `cost` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `payer_id` integer;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `retry_at` text;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `rerun` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `retry_of` integer;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `request_id` text;--> statement-breakpoint
CREATE INDEX `queue_items_user` ON `queue_items` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `queue_items_waiting` ON `queue_items` (`status`,`retry_at`);--> statement-breakpoint
-- Items written before this migration: the reference their listing was made with, and what they cost.
UPDATE `queue_items` SET `external_ref` = 'ad-' || `ad_id` || '-' || `id` WHERE `external_ref` IS NULL;--> statement-breakpoint
UPDATE `queue_items` SET `retry_at` = `updated_at` WHERE `retry_at` IS NULL AND `status` IN ('pending', 'processing');--> statement-breakpoint
UPDATE `queue_items` SET `cost` = coalesce((SELECT -`amount` FROM `wallet_entries` w WHERE w.`queue_item_id` = `queue_items`.`id` AND w.`kind` = 'charge'), 0);--> statement-breakpoint
UPDATE `ad_publications` SET `queue_item_id` = (SELECT max(q.`id`) FROM `queue_items` q WHERE q.`ad_id` = `ad_publications`.`ad_id` AND q.`portal` = `ad_publications`.`portal` AND q.`action` != 'feature');--> statement-breakpoint
-- Open duplicates of one intent (possible before this index): the oldest stays, the others are cancelled.
UPDATE `queue_items` SET `status` = 'cancelled', `reason` = 'duplicate of an open item' WHERE `status` IN ('pending', 'processing') AND EXISTS (SELECT 1 FROM `queue_items` o WHERE o.`ad_id` = `queue_items`.`ad_id` AND o.`portal` = `queue_items`.`portal` AND o.`action` = `queue_items`.`action` AND coalesce(o.`feature`, '') = coalesce(`queue_items`.`feature`, '') AND o.`status` IN ('pending', 'processing') AND o.`id` < `queue_items`.`id`);--> statement-breakpoint
INSERT OR IGNORE INTO `wallet_entries` (`user_id`, `amount`, `kind`, `description`, `ad_id`, `portal`, `queue_item_id`) SELECT w.`user_id`, -w.`amount`, 'refund', 'refund: duplicate of an open item', w.`ad_id`, w.`portal`, w.`queue_item_id` FROM `wallet_entries` w JOIN `queue_items` q ON q.`id` = w.`queue_item_id` WHERE w.`kind` = 'charge' AND q.`status` = 'cancelled' AND q.`reason` = 'duplicate of an open item';--> statement-breakpoint
CREATE UNIQUE INDEX `queue_items_open_intent` ON `queue_items` (`ad_id`,`portal`,`action`,coalesce(`feature`, '')) WHERE `status` IN ('pending', 'processing');