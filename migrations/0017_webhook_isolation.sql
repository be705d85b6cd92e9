CREATE TABLE `webhook_leases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`endpoint_id` integer NOT NULL,
	`expires_at` text NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_leases_endpoint` ON `webhook_leases` (`endpoint_id`,`expires_at`);--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `in_queue` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `consecutive_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `paused_until` text;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `paused_reason` text;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `replay_until` integer DEFAULT 0 NOT NULL;