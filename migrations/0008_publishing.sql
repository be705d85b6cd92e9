CREATE TABLE `ad_features` (
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`feature` text NOT NULL,
	`pending` integer DEFAULT false NOT NULL,
	`pending_date` text,
	`error` integer DEFAULT false NOT NULL,
	`active` integer DEFAULT false NOT NULL,
	`start_date` text,
	PRIMARY KEY(`ad_id`, `portal`, `feature`),
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `ad_statistics` (
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`date` text NOT NULL,
	`views` integer DEFAULT 0 NOT NULL,
	`asqs` integer DEFAULT 0 NOT NULL,
	`bids` integer DEFAULT 0 NOT NULL,
	`url` integer DEFAULT 0 NOT NULL,
	`phone` integer DEFAULT 0 NOT NULL,
	`favorites` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`ad_id`, `portal`, `date`),
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `bids` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`remote_bid_id` integer NOT NULL,
	`amount` integer NOT NULL,
	`name` text NOT NULL,
	`message` text DEFAULT '' NOT NULL,
	`is_read` integer DEFAULT false NOT NULL,
	`placed_at` text NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `bids_remote` ON `bids` (`portal`,`remote_bid_id`);--> statement-breakpoint
CREATE INDEX `bids_ad` ON `bids` (`ad_id`);--> statement-breakpoint
CREATE TABLE `portal_connections` (
	`user_id` integer NOT NULL,
	`portal` text NOT NULL,
	`status` integer DEFAULT false NOT NULL,
	`external_user_id` integer,
	`access_token` text,
	`access_token_expire` text,
	`refresh_token` text,
	`email` text DEFAULT '' NOT NULL,
	`scope` text DEFAULT '[]' NOT NULL,
	`oauth_state` text,
	`oauth_state_expire` text,
	`market_data_pulled_at` text,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`user_id`, `portal`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `portal_connections_pull` ON `portal_connections` (`status`,`market_data_pulled_at`);--> statement-breakpoint
CREATE TABLE `queue_items` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`portal` text NOT NULL,
	`action` text NOT NULL,
	`feature` text,
	`images` integer DEFAULT true NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `queue_items_ad` ON `queue_items` (`ad_id`,`portal`,`status`);--> statement-breakpoint
CREATE TABLE `wallet_entries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`amount` integer NOT NULL,
	`kind` text NOT NULL,
	`description` text NOT NULL,
	`ad_id` integer,
	`portal` text,
	`queue_item_id` integer,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `wallet_entries_user` ON `wallet_entries` (`user_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `wallet_entries_refund_once` ON `wallet_entries` (`queue_item_id`,`kind`);