CREATE TABLE `client_groups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `id_blocks` (
	`kind` text NOT NULL,
	`block` integer NOT NULL,
	`group_id` integer NOT NULL,
	`deleted_high` integer,
	PRIMARY KEY(`kind`, `block`)
);
--> statement-breakpoint
CREATE INDEX `id_blocks_group` ON `id_blocks` (`kind`,`group_id`,`block`);--> statement-breakpoint
ALTER TABLE `api_clients` ADD `group_id` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Issue 56, ids that route (src/db/ids.ts): every id is issued from a block of 4,096 ids leased to one
-- client group, so the block of any id names its group (and, once the data spreads over many databases,
-- its database). The clients and ids before groups are group 1's: it holds every block up to the highest
-- id each table has issued (its AUTOINCREMENT counter where it has one), all marked as used, so group 1's
-- next id comes from a block leased after them and no issued id comes back.
INSERT INTO `client_groups` (`id`) VALUES (1);
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `users`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'users'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'users', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `contacts`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'contacts'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'contacts', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `folders`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'folders'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'folders', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `manufacturers`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'manufacturers'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'manufacturers', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `ads`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'ads'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'ads', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `ad_images`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'ad_images'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'ad_images', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `image_jobs`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'image_jobs'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'image_jobs', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `bids`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'bids'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'bids', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `events`), 0), 0)),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'events', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `webhook_endpoints`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'webhook_endpoints'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'webhook_endpoints', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `webhook_deliveries`), 0), 0)),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'webhook_deliveries', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `ad_update_requests`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'ad_update_requests'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'ad_update_requests', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `queue_items`), 0), 0)),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'queue_items', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `tasks`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'tasks'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'tasks', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `task_runs`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'task_runs'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'task_runs', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `notifications`), 0), coalesce((SELECT `seq` FROM sqlite_sequence WHERE `name` = 'notifications'), 0))),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'notifications', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`)
WITH RECURSIVE `issued`(`high`) AS (SELECT max(coalesce((SELECT max(`id`) FROM `wallet_entries`), 0), 0)),
`legacy`(`block`) AS (SELECT 0 UNION ALL SELECT `block` + 1 FROM `legacy`, `issued` WHERE (`block` + 1) * 4096 <= `high`)
SELECT 'wallet_entries', `block`, 1, `block` * 4096 + 4095 FROM `legacy`;
--> statement-breakpoint
-- An id deleted while it was the newest of its block is remembered on the block, so that the next id of
-- the block comes after it (what AUTOINCREMENT promised within one table).
--> statement-breakpoint
CREATE TRIGGER `users_id_high` AFTER DELETE ON `users`
WHEN NOT EXISTS (SELECT 1 FROM `users` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'users' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_id_high` AFTER DELETE ON `contacts`
WHEN NOT EXISTS (SELECT 1 FROM `contacts` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'contacts' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `folders_id_high` AFTER DELETE ON `folders`
WHEN NOT EXISTS (SELECT 1 FROM `folders` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'folders' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `manufacturers_id_high` AFTER DELETE ON `manufacturers`
WHEN NOT EXISTS (SELECT 1 FROM `manufacturers` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'manufacturers' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ads_id_high` AFTER DELETE ON `ads`
WHEN NOT EXISTS (SELECT 1 FROM `ads` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'ads' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_images_id_high` AFTER DELETE ON `ad_images`
WHEN NOT EXISTS (SELECT 1 FROM `ad_images` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'ad_images' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `image_jobs_id_high` AFTER DELETE ON `image_jobs`
WHEN NOT EXISTS (SELECT 1 FROM `image_jobs` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'image_jobs' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `bids_id_high` AFTER DELETE ON `bids`
WHEN NOT EXISTS (SELECT 1 FROM `bids` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'bids' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `events_id_high` AFTER DELETE ON `events`
WHEN NOT EXISTS (SELECT 1 FROM `events` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'events' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `webhook_endpoints_id_high` AFTER DELETE ON `webhook_endpoints`
WHEN NOT EXISTS (SELECT 1 FROM `webhook_endpoints` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'webhook_endpoints' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `webhook_deliveries_id_high` AFTER DELETE ON `webhook_deliveries`
WHEN NOT EXISTS (SELECT 1 FROM `webhook_deliveries` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'webhook_deliveries' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `ad_update_requests_id_high` AFTER DELETE ON `ad_update_requests`
WHEN NOT EXISTS (SELECT 1 FROM `ad_update_requests` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'ad_update_requests' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `queue_items_id_high` AFTER DELETE ON `queue_items`
WHEN NOT EXISTS (SELECT 1 FROM `queue_items` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'queue_items' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `tasks_id_high` AFTER DELETE ON `tasks`
WHEN NOT EXISTS (SELECT 1 FROM `tasks` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'tasks' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `task_runs_id_high` AFTER DELETE ON `task_runs`
WHEN NOT EXISTS (SELECT 1 FROM `task_runs` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'task_runs' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `notifications_id_high` AFTER DELETE ON `notifications`
WHEN NOT EXISTS (SELECT 1 FROM `notifications` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'notifications' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `wallet_entries_id_high` AFTER DELETE ON `wallet_entries`
WHEN NOT EXISTS (SELECT 1 FROM `wallet_entries` WHERE `id` > OLD.`id` AND `id` < (OLD.`id` / 4096 + 1) * 4096)
BEGIN
  UPDATE `id_blocks` SET `deleted_high` = OLD.`id`
  WHERE `kind` = 'wallet_entries' AND `block` = OLD.`id` / 4096 AND coalesce(`deleted_high`, 0) < OLD.`id`;
END;
