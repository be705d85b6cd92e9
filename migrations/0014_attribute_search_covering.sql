DROP INDEX `ad_attributes_search`;--> statement-breakpoint
DROP INDEX `ad_attributes_range`;--> statement-breakpoint
CREATE INDEX `ad_attributes_search` ON `ad_attributes` (`portal`,`key`,`value`,`ad_id`);--> statement-breakpoint
CREATE INDEX `ad_attributes_range` ON `ad_attributes` (`portal`,`key`,`value_number`,`ad_id`);