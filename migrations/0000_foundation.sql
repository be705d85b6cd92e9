CREATE TABLE `api_clients` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`key_hash` text NOT NULL,
	`internal` integer DEFAULT false NOT NULL,
	`partner` integer DEFAULT false NOT NULL,
	`rate` integer,
	`burst` integer,
	`revoked` integer DEFAULT false NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_clients_name_unique` ON `api_clients` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_clients_key_hash_unique` ON `api_clients` (`key_hash`);