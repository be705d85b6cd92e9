-- The directory (src/db/shards.ts): the clients and their keys, their groups and the shard each group
-- lives on, and every block of ids leased to a group (src/db/ids.ts). It is the authority for all three;
-- each shard keeps a copy of its own groups, clients and blocks, which its queries and foreign keys use.
-- The tables have the shards' shapes, so that one Drizzle schema serves both.
CREATE TABLE `api_clients` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`key_hash` text NOT NULL,
	`internal` integer DEFAULT false NOT NULL,
	`partner` integer DEFAULT false NOT NULL,
	`rate` integer,
	`burst` integer,
	`revoked` integer DEFAULT false NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`return_origins` text DEFAULT '[]' NOT NULL,
	`group_id` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_clients_name_unique` ON `api_clients` (`name`);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_clients_key_hash_unique` ON `api_clients` (`key_hash`);
--> statement-breakpoint
CREATE TABLE `client_groups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`shard` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `client_groups_shard` ON `client_groups` (`shard`);
--> statement-breakpoint
CREATE TABLE `id_blocks` (
	`kind` text NOT NULL,
	`block` integer NOT NULL,
	`group_id` integer NOT NULL,
	`deleted_high` integer,
	PRIMARY KEY(`kind`, `block`)
);
--> statement-breakpoint
CREATE INDEX `id_blocks_group` ON `id_blocks` (`kind`,`group_id`,`block`);
--> statement-breakpoint
-- Group 1 on shard 1, with block 0 of every table, as migration 0030 leaves a new database. A directory
-- beside a database with data is filled from it instead (scripts/directory.mjs, run by db:setup and deploy).
INSERT INTO `client_groups` (`id`, `shard`) VALUES (1, 1);
--> statement-breakpoint
INSERT INTO `id_blocks` (`kind`, `block`, `group_id`, `deleted_high`) VALUES
  ('users', 0, 1, 4095),
  ('contacts', 0, 1, 4095),
  ('folders', 0, 1, 4095),
  ('manufacturers', 0, 1, 4095),
  ('ads', 0, 1, 4095),
  ('ad_images', 0, 1, 4095),
  ('image_jobs', 0, 1, 4095),
  ('bids', 0, 1, 4095),
  ('webhook_endpoints', 0, 1, 4095),
  ('ad_update_requests', 0, 1, 4095),
  ('queue_items', 0, 1, 4095),
  ('tasks', 0, 1, 4095),
  ('task_runs', 0, 1, 4095),
  ('notifications', 0, 1, 4095),
  ('wallet_entries', 0, 1, 4095);
