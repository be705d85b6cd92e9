-- Issue 56, resumable group moves (src/db/moves/): the token of the move's own writes on the shard a
-- group moves to (every other write to the group's rows is refused there until the switch), and a move's
-- progress, which the directory keeps (the shards have the column of the schema they share, left empty).
CREATE TABLE `move_writes` (
	`group_id` integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
ALTER TABLE `client_groups` ADD `move_progress` text;