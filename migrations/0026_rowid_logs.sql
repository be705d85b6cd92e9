-- Rows written, issue "Half the rows written": the four logs a placement and a webhook delivery append
-- to (jobs, the wallet ledger, events, webhook deliveries) keep their ids as rowids instead of
-- AUTOINCREMENT, so an insert no longer also writes the table's counter in `sqlite_sequence`. A rowid is
-- the largest plus one, so an id could only come back if the newest row were deleted: jobs and ledger
-- entries never are, and the purge of events and deliveries keeps the newest of each.
-- `queue_items_open` goes: the cron lists the open jobs through `queue_items_open_intent`, whose entry is
-- written once per job and never moves. A charge is made once with its job by construction, so the
-- ledger's unique index holds refunds only (one per job), and a charge no longer writes an entry in it.
-- A webhook lease is a row without rowid keyed by endpoint, expiry and a random holder: one row written to
-- take it, where a row, its index entry and the id counter were.
-- SQLite drops AUTOINCREMENT only by rebuilding the table; each copy runs in chunks of a tenth of the
-- table (on a million jobs and three million events no statement took over 1.5 s: docs/capacity.md), and
-- the indexes are built after it. Leases in flight are dropped: a delivery that held one ends it by a key
-- that is gone, and its endpoint's slots are free a minute early.
DROP TABLE `webhook_leases`;
--> statement-breakpoint
CREATE TABLE `webhook_leases` (
	`endpoint_id` integer NOT NULL,
	`expires_at` text NOT NULL,
	`holder` integer NOT NULL,
	PRIMARY KEY(`endpoint_id`, `expires_at`, `holder`),
	FOREIGN KEY (`endpoint_id`) REFERENCES `webhook_endpoints`(`id`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `__new_queue_items` (
	`id` integer PRIMARY KEY NOT NULL,
	`ad_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`portal` text NOT NULL,
	`action` text NOT NULL,
	`feature` text,
	`images` integer DEFAULT true NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`reason` text,
	`nonce` text,
	`external_ref` text,
	`cost` integer DEFAULT 0 NOT NULL,
	`payer_id` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`retry_at` text,
	`rerun` integer DEFAULT false NOT NULL,
	`remote_ad_id` integer,
	`retry_of` integer,
	`request_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 0;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 1;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 2;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 3;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 4;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 5;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 6;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 7;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 8;
--> statement-breakpoint
INSERT INTO `__new_queue_items`("id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at") SELECT "id", "ad_id", "user_id", "portal", "action", "feature", "images", "status", "reason", "nonce", "external_ref", "cost", "payer_id", "attempts", "retry_at", "rerun", "remote_ad_id", "retry_of", "request_id", "created_at", "updated_at" FROM `queue_items` WHERE `id` % 10 = 9;
--> statement-breakpoint
DROP TABLE `queue_items`;
--> statement-breakpoint
ALTER TABLE `__new_queue_items` RENAME TO `queue_items`;
--> statement-breakpoint
CREATE INDEX `queue_items_ad` ON `queue_items` (`ad_id`,`portal`);
--> statement-breakpoint
CREATE INDEX `queue_items_user` ON `queue_items` (`user_id`,`id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `queue_items_open_intent` ON `queue_items` (`ad_id`,`portal`,`action`,coalesce(`feature`, '')) WHERE `status` IN ('pending', 'processing');
--> statement-breakpoint
CREATE TABLE `__new_wallet_entries` (
	`id` integer PRIMARY KEY NOT NULL,
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
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 0;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 1;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 2;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 3;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 4;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 5;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 6;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 7;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 8;
--> statement-breakpoint
INSERT INTO `__new_wallet_entries`("id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at") SELECT "id", "user_id", "amount", "kind", "description", "ad_id", "portal", "queue_item_id", "created_at" FROM `wallet_entries` WHERE `id` % 10 = 9;
--> statement-breakpoint
DROP TABLE `wallet_entries`;
--> statement-breakpoint
ALTER TABLE `__new_wallet_entries` RENAME TO `wallet_entries`;
--> statement-breakpoint
CREATE INDEX `wallet_entries_user` ON `wallet_entries` (`user_id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `wallet_entries_refund_once` ON `wallet_entries` (`queue_item_id`) WHERE `kind` = 'refund';
--> statement-breakpoint
CREATE TABLE `__new_events` (
	`id` integer PRIMARY KEY NOT NULL,
	`client_id` integer,
	`user_id` integer,
	`type` text NOT NULL,
	`ad_id` integer,
	`portal` text,
	`data` text DEFAULT '{}' NOT NULL,
	`occurred_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 0;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 1;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 2;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 3;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 4;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 5;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 6;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 7;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 8;
--> statement-breakpoint
INSERT INTO `__new_events`("id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at") SELECT "id", "client_id", "user_id", "type", "ad_id", "portal", "data", "occurred_at" FROM `events` WHERE `id` % 10 = 9;
--> statement-breakpoint
DROP TABLE `events`;
--> statement-breakpoint
ALTER TABLE `__new_events` RENAME TO `events`;
--> statement-breakpoint
CREATE INDEX `events_client` ON `events` (`client_id`,`id`);
--> statement-breakpoint
CREATE INDEX `events_user` ON `events` (`user_id`,`id`);
--> statement-breakpoint
CREATE TABLE `__new_webhook_deliveries` (
	`id` integer PRIMARY KEY NOT NULL,
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
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 0;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 1;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 2;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 3;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 4;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 5;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 6;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 7;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 8;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at") SELECT "id", "endpoint_id", "event_id", "message_id", "attempt", "status_code", "latency_ms", "error", "succeeded", "next_attempt_at", "created_at" FROM `webhook_deliveries` WHERE `id` % 10 = 9;
--> statement-breakpoint
DROP TABLE `webhook_deliveries`;
--> statement-breakpoint
ALTER TABLE `__new_webhook_deliveries` RENAME TO `webhook_deliveries`;
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint` ON `webhook_deliveries` (`endpoint_id`,`id`);
