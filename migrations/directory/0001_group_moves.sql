-- Issue 56, moving a client group between shards online (src/db/moves/): the shard a moving group goes
-- to, and after a move the id of its first event on its new shard (the same columns as a shard's copy).
ALTER TABLE `client_groups` ADD `moving_to` integer;
--> statement-breakpoint
ALTER TABLE `client_groups` ADD `events_from` integer;
