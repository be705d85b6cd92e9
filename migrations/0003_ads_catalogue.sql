CREATE TABLE `ad_attributes` (
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`locale` text DEFAULT 'nl_NL' NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`value_number` real,
	`seq` integer NOT NULL,
	PRIMARY KEY(`ad_id`, `portal`, `seq`),
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `ad_attributes_search` ON `ad_attributes` (`portal`,`key`,`value`);--> statement-breakpoint
CREATE INDEX `ad_attributes_range` ON `ad_attributes` (`portal`,`key`,`value_number`);--> statement-breakpoint
CREATE TABLE `ad_publications` (
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
	PRIMARY KEY(`ad_id`, `portal`),
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `ad_publications_active` ON `ad_publications` (`portal`,`active`);--> statement-breakpoint
CREATE TABLE `ad_settings` (
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`showcontact` integer DEFAULT true NOT NULL,
	`autoreplace` integer DEFAULT false NOT NULL,
	`video` text,
	PRIMARY KEY(`ad_id`, `portal`),
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `ad_update_requests` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ad_id` integer NOT NULL,
	`portal` text NOT NULL,
	`reason` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`ad_id`) REFERENCES `ads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `ad_update_requests_ad` ON `ad_update_requests` (`ad_id`);--> statement-breakpoint
CREATE TABLE `attribute_definitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`category_id` integer NOT NULL,
	`portal` text NOT NULL,
	`key` text NOT NULL,
	`label_nl` text NOT NULL,
	`label_en` text NOT NULL,
	`values` text DEFAULT '[]' NOT NULL,
	`type` text NOT NULL,
	`sort` integer DEFAULT 0 NOT NULL,
	`minimum` integer,
	`maximum` integer,
	`unit` text DEFAULT '' NOT NULL,
	`mandatory` integer DEFAULT false NOT NULL,
	`writable` integer DEFAULT true NOT NULL,
	`updatable` integer DEFAULT true NOT NULL,
	`searchable` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `attribute_definitions_key` ON `attribute_definitions` (`category_id`,`portal`,`key`);--> statement-breakpoint
CREATE TABLE `categories` (
	`id` integer PRIMARY KEY NOT NULL,
	`group_id` integer NOT NULL,
	`description_nl` text NOT NULL,
	`description_en` text NOT NULL,
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `category_prices` (
	`category_id` integer NOT NULL,
	`portal` text NOT NULL,
	`action` text NOT NULL,
	`price_internal` integer NOT NULL,
	`price_external` integer NOT NULL,
	`price_total` integer NOT NULL,
	`price_native` integer NOT NULL,
	PRIMARY KEY(`category_id`, `portal`, `action`),
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `groups` (
	`id` integer PRIMARY KEY NOT NULL,
	`description_nl` text NOT NULL,
	`description_en` text NOT NULL,
	`automotive` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE `manufacturers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`group_id` integer,
	`category_id` integer,
	`brands` text DEFAULT '[]' NOT NULL,
	`tradename` text NOT NULL,
	`address` text NOT NULL,
	`email` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`group_id`) REFERENCES `groups`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`category_id`) REFERENCES `categories`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `manufacturers_user_idx` ON `manufacturers` (`user_id`);--> statement-breakpoint
ALTER TABLE `ads` ADD `external_ad_id` integer;--> statement-breakpoint
ALTER TABLE `ads` ADD `type` text DEFAULT 'supply' NOT NULL;--> statement-breakpoint
ALTER TABLE `ads` ADD `imagetext` text;--> statement-breakpoint
ALTER TABLE `ads` ADD `description` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `ads` ADD `category_id` integer REFERENCES categories(id);--> statement-breakpoint
ALTER TABLE `ads` ADD `url` text;--> statement-breakpoint
ALTER TABLE `ads` ADD `price_model` text DEFAULT 'see description' NOT NULL;--> statement-breakpoint
ALTER TABLE `ads` ADD `price` integer;--> statement-breakpoint
ALTER TABLE `ads` ADD `minimum_bid` integer;--> statement-breakpoint
ALTER TABLE `ads` ADD `shipping_costs` integer;--> statement-breakpoint
ALTER TABLE `ads` ADD `retail` integer;--> statement-breakpoint
ALTER TABLE `ads` ADD `license_plate` text;--> statement-breakpoint
ALTER TABLE `ads` ADD `manufacturer_id` integer REFERENCES manufacturers(id);--> statement-breakpoint
CREATE INDEX `ads_category_idx` ON `ads` (`category_id`);--> statement-breakpoint
CREATE INDEX `ads_created_idx` ON `ads` (`created_at`);