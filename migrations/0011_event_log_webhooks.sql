CREATE TABLE `events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`client_id` integer,
	`user_id` integer,
	`type` text NOT NULL,
	`ad_id` integer,
	`portal` text,
	`data` text DEFAULT '{}' NOT NULL,
	`occurred_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_client` ON `events` (`client_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_user` ON `events` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_age` ON `events` (`occurred_at`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`endpoint_id` integer NOT NULL,
	`event_id` integer,
	`message_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`latency_ms` integer,
	`error` text,
	`succeeded` integer DEFAULT false NOT NULL,
	`next_attempt_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint` ON `webhook_deliveries` (`endpoint_id`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_age` ON `webhook_deliveries` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`client_id` integer NOT NULL,
	`url` text NOT NULL,
	`types` text,
	`enabled` integer DEFAULT true NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_until` text,
	`last_event_id` integer DEFAULT 0 NOT NULL,
	`failing_since` text,
	`disabled_reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_client` ON `webhook_endpoints` (`client_id`);