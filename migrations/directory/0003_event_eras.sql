-- Issue 65, event cursors across any number of group moves (src/db/moves/cursors.ts): every `events_from`
-- a group's moves set, oldest first (the same column as a shard's copy).
ALTER TABLE `client_groups` ADD `event_eras` text;
--> statement-breakpoint
UPDATE `client_groups` SET `event_eras` = json_array(`events_from`) WHERE `events_from` IS NOT NULL;
