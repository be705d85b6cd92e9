-- Issue 65, event cursors across any number of group moves (src/db/moves/cursors.ts): a group's eras of
-- event ids (every `events_from` its moves set), and each moved event's id in every era it lived through.
ALTER TABLE `client_groups` ADD `event_eras` text;--> statement-breakpoint
-- A group that moved once before has one era boundary: its `events_from`; its moved events' ids there.
UPDATE `client_groups` SET `event_eras` = json_array(`events_from`) WHERE `events_from` IS NOT NULL;--> statement-breakpoint
ALTER TABLE `events` ADD `origins` text;--> statement-breakpoint
UPDATE `events` SET `origins` = json_array(`origin_id`) WHERE `origin_id` IS NOT NULL;
