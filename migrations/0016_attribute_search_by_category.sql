-- Attribute rows carry their ad's category and user (both fixed when the ad is created), and the search
-- indexes lead with the category the search names: an attribute search lists its matches and who owns
-- them from the index, instead of looking up every ad with the value in any category.
DROP INDEX `ad_attributes_search`;--> statement-breakpoint
DROP INDEX `ad_attributes_range`;--> statement-breakpoint
ALTER TABLE `ad_attributes` ADD `category_id` integer;--> statement-breakpoint
ALTER TABLE `ad_attributes` ADD `user_id` integer;--> statement-breakpoint
UPDATE `ad_attributes` SET (`category_id`, `user_id`) = (SELECT `category_id`, `user_id` FROM `ads` WHERE `ads`.`id` = `ad_attributes`.`ad_id`);--> statement-breakpoint
CREATE INDEX `ad_attributes_search` ON `ad_attributes` (`portal`,`key`,`category_id`,`value`,`user_id`,`ad_id`);--> statement-breakpoint
CREATE INDEX `ad_attributes_range` ON `ad_attributes` (`portal`,`key`,`category_id`,`value_number`,`user_id`,`ad_id`);
