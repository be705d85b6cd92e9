-- Issue 56, moving a client group between shards online (src/db/moves/): the change log the move's
-- triggers write on the shard a group leaves, the move's state on the shard's copy of the group, and
-- the origin of events a move brought from another shard.
CREATE TABLE `move_log` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`group_id` integer NOT NULL,
	`table_name` text NOT NULL,
	`row_key` text NOT NULL
);
--> statement-breakpoint
ALTER TABLE `client_groups` ADD `moving_to` integer;--> statement-breakpoint
ALTER TABLE `client_groups` ADD `events_from` integer;--> statement-breakpoint
ALTER TABLE `events` ADD `origin_id` integer;--> statement-breakpoint
CREATE INDEX `events_origin` ON `events` (`origin_id`) WHERE "events"."origin_id" IS NOT NULL;