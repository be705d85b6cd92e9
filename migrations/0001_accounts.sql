CREATE TABLE `ads` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`contact_id` integer,
	`folder_id` integer,
	`status` text DEFAULT 'active' NOT NULL,
	`title` text NOT NULL,
	`provider` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`folder_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `ads_user_idx` ON `ads` (`user_id`,`status`);--> statement-breakpoint
CREATE INDEX `ads_contact_idx` ON `ads` (`contact_id`);--> statement-breakpoint
CREATE INDEX `ads_folder_idx` ON `ads` (`folder_id`);--> statement-breakpoint
CREATE TABLE `cache_revisions` (
	`scope` text PRIMARY KEY NOT NULL,
	`revision` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`name` text NOT NULL,
	`address` text NOT NULL,
	`house_number` text NOT NULL,
	`postal_code` text,
	`city` text NOT NULL,
	`county` text DEFAULT '' NOT NULL,
	`phone` text NOT NULL,
	`website` text,
	`chathandle` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contacts_user_idx` ON `contacts` (`user_id`,`id`);--> statement-breakpoint
CREATE TABLE `folders` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`description` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `folders_user_idx` ON `folders` (`user_id`,`id`);--> statement-breakpoint
CREATE TABLE `user_ad_settings` (
	`user_id` integer NOT NULL,
	`portal` text NOT NULL,
	`header` text NOT NULL,
	`footer` text NOT NULL,
	`allow_contact_by_email` integer DEFAULT true NOT NULL,
	PRIMARY KEY(`user_id`, `portal`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `user_settings` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`main_user_id` integer,
	`wallet_user_id` integer,
	`max_contacts` integer DEFAULT 25 NOT NULL,
	`status` text DEFAULT 'locked' NOT NULL,
	`type` text DEFAULT 'supply' NOT NULL,
	`allowbids` integer DEFAULT true NOT NULL,
	`showcontact` integer DEFAULT true NOT NULL,
	`items_per_page` integer DEFAULT 25 NOT NULL,
	`max_images` integer DEFAULT 24 NOT NULL,
	`group_id` integer,
	`category_id` integer,
	`attributes` text DEFAULT '[]' NOT NULL,
	`budget_notify_limit` integer DEFAULT 0 NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`main_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`wallet_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`client_id` integer,
	`external_user_id` integer,
	`company_name` text,
	`gender` text,
	`first_name` text,
	`last_name` text,
	`date_of_birth` text,
	`address` text,
	`house_number` text,
	`postal_code` text,
	`city` text,
	`county` text DEFAULT '' NOT NULL,
	`country` text DEFAULT 'NL' NOT NULL,
	`email` text NOT NULL,
	`website` text,
	`phone` text,
	`fax` text,
	`cellular` text,
	`subscription_stock` integer DEFAULT false NOT NULL,
	`subscription_shop` integer DEFAULT false NOT NULL,
	`deleted_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`client_id`) REFERENCES `api_clients`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `users_client_idx` ON `users` (`client_id`,`id`);