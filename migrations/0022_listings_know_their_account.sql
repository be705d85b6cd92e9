-- A listing knows the marketplace account that holds it, so that a reconnect to another account cannot
-- orphan it and no job acts on it through another account's connection. Live listings placed before
-- are taken to be held by the account their user is connected to now.
ALTER TABLE `ad_publications` ADD `remote_account_id` integer;--> statement-breakpoint
UPDATE `ad_publications` SET `remote_account_id` = (SELECT c.`external_user_id` FROM `portal_connections` c JOIN `ads` a ON a.`user_id` = c.`user_id` WHERE a.`id` = `ad_publications`.`ad_id` AND c.`portal` = `ad_publications`.`portal`) WHERE `active` = 1 AND `portal` != 'website';
