ALTER TABLE `queue_items` ADD `waiting_since` text;--> statement-breakpoint
ALTER TABLE `queue_items` ADD `waiting_account` integer;